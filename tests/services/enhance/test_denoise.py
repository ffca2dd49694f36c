"""The offline backend (RNNoise) really denoises: SNR of speech in white noise goes up."""

from __future__ import annotations

import numpy as np
import pytest

from services.enhance.chunking import ChunkGeometry, pad_segment
from services.enhance.denoise import RNNoiseBackend, rnnoise_denoise
from services.enhance.pipeline import Enhancer
from services.enhance.segments import CutSegment, SegmentSpec
from tests.speechgen import have_espeak, synth

pytestmark = pytest.mark.skipif(not have_espeak(), reason="espeak-ng not installed")


def si_snr(ref: np.ndarray, est: np.ndarray) -> float:
    """Scale-invariant SNR (dB) of ``est`` against the clean ``ref``."""
    a = float(np.dot(ref, est) / np.dot(ref, ref))
    noise = est - a * ref
    return float(10 * np.log10(np.sum((a * ref) ** 2) / np.sum(noise ** 2)))


def noisy_speech(snr_db: float, seconds: float = 14.0) -> tuple[np.ndarray, np.ndarray]:
    phrase = synth("she sells sea shells by the sea shore, and the shells she sells are "
                   "surely sea shells", "en", rate=48000)
    clean = np.tile(phrase, int(np.ceil(seconds * 48000 / phrase.size)))[: int(seconds * 48000)]
    clean = (0.5 * clean / np.abs(clean).max()).astype(np.float32)
    noise = np.random.default_rng(0).standard_normal(clean.size).astype(np.float32)
    noise *= np.sqrt(np.mean(clean ** 2) / np.mean(noise ** 2) / 10 ** (snr_db / 10))
    return clean, clean + noise


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
