"""A batch's clips at other rates resampled once (services/enhance/resampled.py): the same array
at the same rates gives back the first result, which is what ``resample`` gives; another array
(a slice of it too) or other rates are resampled on their own; the dedup signature of a
segment from the shared 8 kHz audio is the one it makes itself."""

from __future__ import annotations

import numpy as np

from common.shards.audio import resample
from services.dedup.fingerprint import telephone_rate
from services.dedup.signature import SignatureWriter
from services.enhance.resampled import Resampled

SR = 48000


def _clip(seconds: float, seed: int = 0) -> np.ndarray:
    return (np.random.default_rng(seed).normal(0, 0.1, round(seconds * SR))).astype(np.float32)


def test_the_same_clip_is_resampled_once() -> None:
    rs, x = Resampled(), _clip(1.0)
    first = rs(x, SR, 16000)
    assert np.array_equal(first, resample(x, SR, 16000))
    assert rs(x, SR, 16000) is first and rs.hits == 1
    assert rs(x, SR, 8000).size == 8000 and rs.hits == 1  # another rate: its own
    part = x[:SR // 2]
    assert rs(part, SR, 16000) is not first and rs.hits == 1  # a slice is another clip
    assert rs(x, SR, SR) is x  # no resampling at all


def test_a_signature_from_the_shared_telephone_audio_is_the_same() -> None:
    x = _clip(3.0, seed=1)
    rows = []
    for shared in (None, Resampled()(x, SR, 8000)):
        w = SignatureWriter()
        w.add("k_0000", "k", 0, 3.0, "a few words", "en", 3.1, x, SR, telephone=shared)
        rows.append({k: v[0] for k, v in w.rows.items()})
    assert rows[0] == rows[1]
    assert np.array_equal(telephone_rate(x, SR), Resampled()(x, SR, 8000))
