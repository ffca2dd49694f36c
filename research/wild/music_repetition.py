"""Repetition-based separation of a music bed ahead of the decode, tried against the bed WER
goal (<= 1.25x clean) and not landed: nothing here beat held-tone suppression
(services/asr/music.py) on the Debian tracks; the figures are in docs/asr.md (music).

Methods, each on the audio Whisper decodes, in 30 s blocks (a short tail joins the block before):

- ``repet_sim``: librosa's documented vocal separation (REPET-SIM): the music estimate of a frame
  is the median of the frames most like it (cosine, at least 2 s away:
  ``librosa.decompose.nn_filter``), capped by the mix, and a soft mask
  (``librosa.util.softmask``, margin 1, power 2) keeps the rest;
- ``pause_neighbours``: the same idea with the neighbours drawn only from the pauses between
  sentences (the reference spans: an oracle for the VAD), so the estimate holds no speech; the
  ``k`` pause frames most like each frame, median, a Wiener gain (``over`` times the estimate,
  floor -20 dB).

WER of each / WER of the clean file (no treatment), under the bench's two track orders
(``bed_track`` seeds 0 and 1), and each method's CPU seconds per audio hour.
``QUICK=1 python -m research.wild.music_repetition`` (2 min of speech, else 5 min).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np

from bench.wild.music_suppression import _stage, bed_ratios, wer_of
from fixtures.longform import SR, real_english, real_longform
from services.asr.music import blocks

HOP = 256
N_FFT = 1024
BLOCK_SECONDS = 30.0  # the held-tone gate's blocks


def repet_sim(x: np.ndarray) -> np.ndarray:
    import librosa

    out = []
    for a, b, _, _ in blocks(x.size, BLOCK_SECONDS, 0.0):
        spec = librosa.stft(x[a:b], n_fft=N_FFT, hop_length=HOP)
        mag = np.abs(spec)
        width = int(librosa.time_to_frames(2, sr=SR, hop_length=HOP))
        music = np.minimum(mag, librosa.decompose.nn_filter(
            mag, aggregate=np.median, metric="cosine", width=width))
        mask = librosa.util.softmask(mag - music, music, power=2)
        out.append(librosa.istft(spec * mask, hop_length=HOP, length=b - a))
    return np.concatenate(out).astype(np.float32)


def pause_neighbours(x: np.ndarray, spans: list[tuple[float, float]], k: int = 8,
                     over: float = 1.0) -> np.ndarray:
    from services.asr.music import _istft, _stft

    spec = _stft(x)  # frame t starts at t * HOP - N_FFT
    pause = np.ones(spec.shape[0], bool)
    for s, e in spans:  # a frame touching a sentence is not a pause
        pause[max(0, int(s * SR / HOP)):int(e * SR / HOP) + N_FFT // HOP + 1] = False
    gain = np.ones(spec.shape, np.float32)
    for a, b, _, _ in blocks(x.size, BLOCK_SECONDS, 0.0):
        lo, hi = a // HOP, min(spec.shape[0], b // HOP + N_FFT // HOP)
        mag = np.abs(spec[lo:hi])
        idx = np.flatnonzero(pause[lo:hi])
        if idx.size <= k:
            continue
        f = mag / (np.linalg.norm(mag, axis=1, keepdims=True) + 1e-9)
        sim = f @ f[idx].T
        sim[np.abs(np.arange(hi - lo)[:, None] - idx[None, :]) < 3] = -np.inf  # not itself
        music = np.median(mag[idx[np.argpartition(-sim, k, axis=1)[:, :k]]], axis=1)
        m2 = np.minimum(over * music, mag) ** 2
        s2 = np.maximum(mag ** 2 - m2, 0.0)
        gain[lo:hi] = np.maximum(s2 / (s2 + m2 + 1e-12), 0.1)
    return _istft(spec * gain, x.size)


def repetition_rows(quick: bool) -> list[dict]:
    from services.asr.music import suppress

    form = real_longform(real_english(), seconds=120 if quick else 300, seed=3)
    methods: dict[str, Callable[[np.ndarray], np.ndarray]] = {
        "none": lambda x: x,
        "held tones": lambda x: suppress(x, 0.75)[0],
        "REPET-SIM (librosa)": repet_sim,
        "pause neighbours (oracle pauses)": lambda x: pause_neighbours(x, form.spans),
    }
    rows = []
    with tempfile.TemporaryDirectory(prefix="onsei-bench-music-rep-") as d:
        stage = _stage(Path(d), False)

        wer = wer_of(stage, form)
        clean = wer(form.audio)
        for name, fn in methods.items():
            got, cost = bed_ratios(form, fn, wer, clean)
            rows.append({"name": f"wild music repetition: {name}, WER under bed / clean "
                                 f"({clean:.4f}; {form.seconds / 60:.1f} min)",
                         "ours": got, "cpu_s_per_audio_hour": cost,
                         "goal": "<= 1.25 each"})
    return rows


if __name__ == "__main__":
    for row in repetition_rows(bool(os.environ.get("QUICK"))):
        print(row, flush=True)
