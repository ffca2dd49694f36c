"""The offline backend (RNNoise) really denoises: SNR of speech in white noise goes up."""

from __future__ import annotations

import numpy as np
import pytest

from fixtures.speechgen import noisy_speech, si_snr
from services.enhance.chunking import ChunkGeometry, pad_segment
from services.enhance.denoise import RNNoiseBackend, rnnoise_denoise
from services.enhance.flow import Enhancer
from services.enhance.segments import CutSegment, SegmentSpec
from tests.system_packages import ESPEAK, needs

pytestmark = needs(ESPEAK)


@pytest.mark.parametrize("snr_in", [0.0, 10.0])
def test_rnnoise_raises_snr_through_the_chunked_engine(snr_in: float) -> None:
    clean, noisy = noisy_speech(snr_in)
    backend = RNNoiseBackend()
    geom = ChunkGeometry.from_seconds(48000, 10.0, 0.5, 0.04, backend.hop)
    seg = CutSegment(0, SegmentSpec("k", 0, 0.0, 14.0, "", "en"), noisy.size,
                     pad_segment(noisy, 0, noisy.size, geom.margin))
    [(_, out)] = list(Enhancer(backend, geom, 2).run([seg]))
    assert out.size == noisy.size
    before, after = si_snr(clean, noisy), si_snr(clean, out)
    print(f"rnnoise SI-SNR {before:.1f} dB -> {after:.1f} dB (+{after - before:.1f})")
    assert abs(before - snr_in) < 0.5
    assert after - before >= (6.0 if snr_in == 0 else 3.0)


def test_rnnoise_output_is_aligned_with_its_input() -> None:
    clean, noisy = noisy_speech(20.0, seconds=3.0)
    out = rnnoise_denoise(noisy)
    lags = range(-960, 961, 160)
    best = max(lags, key=lambda k: float(np.dot(clean[2000:-2000], np.roll(out, k)[2000:-2000])))
    assert best == 0
