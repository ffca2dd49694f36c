"""The fingerprint's band energies, summed over each band's run of bins, against the band
matrix product they replace (services/dedup/fingerprint.py): on real speech and its copies the
same bits, within one in 10,000."""

from __future__ import annotations

import numpy as np

from fixtures.dedup_corpus import SR, TRANSFORMS
from services.dedup import fingerprint as fp
from tests.services.dedup.helpers import clips
from tests.system_packages import ESPEAK, POCKETSPHINX, needs

pytestmark = needs(ESPEAK, POCKETSPHINX)


def test_band_energies_are_the_band_matrix_product() -> None:
    for c in clips():
        for audio in (c.audio, TRANSFORMS["noise_20dB"](c.audio)):
            power = fp.power_spectrogram(audio, SR)
            e = power @ fp._BANDS
            d = e[:, :-1] - e[:, 1:]
            bits = (d[1:] - d[:-1]) > 0
            want = (bits.astype(np.uint64) @ fp._WEIGHTS).astype(np.uint32)
            got = fp.fingerprint_of(power)
            assert got.shape == want.shape
            assert np.bitwise_count(want ^ got).sum() <= want.size * fp.BITS * 1e-4
