"""The signature's spectrograms in torch on a device (services/enhance/signature_powers.py) against
the numpy path: on real speech and its copies the keys and landmarks come out the same, the
fingerprints within a bit in 10,000."""

from __future__ import annotations

import numpy as np
import pytest

from fixtures.dedup_corpus import SR, TRANSFORMS
from services.dedup import fingerprint as fp
from services.dedup.landmarks import PHASE_STARTS, audio_keys_of, landmark_set
from services.dedup.spectrum import numpy_powers
from services.enhance.signature_powers import DevicePowers
from tests.services.dedup.helpers import clips
from tests.system_packages import ESPEAK, POCKETSPHINX, needs

torch = pytest.importorskip("torch")
DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
needs_speech = needs(ESPEAK, POCKETSPHINX)


def _speech() -> list[np.ndarray]:
    out = []
    for c in clips():
        for a in [c.audio] + [TRANSFORMS[t](c.audio) for t in ("mp3_64k", "noise_20dB")]:
            x = fp.telephone_rate(a, SR)
            out += [x, x[37:]]  # a cut that is no whole hop
    return out


@pytest.mark.parametrize("n", [0, 100, fp.FRAME + fp.HOP - 1, fp.FRAME + fp.HOP,
                               fp.FRAME + fp.HOP + fp.HOP // 2, 5000])
@pytest.mark.parametrize("device", DEVICES)
def test_device_spectrograms_have_the_numpy_shapes(device: str, n: int) -> None:
    x = np.random.default_rng(n).standard_normal(n).astype(np.float32)
    want, got = numpy_powers(x, PHASE_STARTS), DevicePowers(device)(x, PHASE_STARTS)
    assert [p.shape for p in got] == [p.shape for p in want]
    assert all(p.dtype == np.float32 for p in got)
    for a, b in zip(want, got):
        np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-5 * max(1.0, float(a.max(initial=0))))


@needs_speech
@pytest.mark.parametrize("device", DEVICES)
def test_device_signature_matches_the_numpy_one(device: str) -> None:
    on_device = DevicePowers(device)
    bits = flipped = 0
    for x in _speech():
        want, got = numpy_powers(x, PHASE_STARTS), on_device(x, PHASE_STARTS)
        a, b = fp.fingerprint_of(want[0]), fp.fingerprint_of(got[0])
        flipped += int(np.bitwise_count(a ^ b).sum())
        bits += a.size * fp.BITS
        la, lb = set(landmark_set(x, want).tolist()), set(landmark_set(x, got).tolist())
        assert len(la & lb) / len(la | lb) >= 0.99
        assert len(set(audio_keys_of(x, want)) & set(audio_keys_of(x, got))) >= 18  # of 20
    assert flipped / bits < 1e-4
