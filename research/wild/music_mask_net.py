"""A small learned speech/music mask, tried against the bed WER goal and not landed (it hurt:
docs/asr.md, music): the music bed taken out of the audio Whisper decodes.

A stack of dilated 1-D convolutions over time reads the log-magnitude spectrum (32 ms frames,
16 ms hop, all 257 bins as channels; 65 frames of context, about 0.5 s either side) and gives
each bin a soft gain in [``FLOOR``, 1] that keeps speech and takes the music out. Trained on
mixtures at -2 to 18 dB of speech and music the bench never evaluates on (music_mask_train.py:
fillets-ng and frozen-bubble music, espeak-ng and fillets-ng voices); weights are a small
``.npz`` of float16 arrays. Inference is pure numpy (a convolution is one matmul over stacked
frames), per block of ``BLOCK_SECONDS`` with ``CONTEXT_SECONDS`` either side, and only in
blocks the held-tone gate (services/asr/music.py) calls music, so clean speech is untouched.
Weights default to ``~/.cache/onsei/music_mask.npz`` (made by the training script, not
committed).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

SR = 16000
N_FFT = 512
HOP = 256  # sqrt-Hann at analysis and synthesis at 50 % overlap: their product adds to one
BINS = N_FFT // 2 + 1
WEIGHTS = Path.home() / ".cache/onsei/music_mask.npz"
KERNEL = 3
DILATIONS = (1, 2, 4, 8, 16, 1)
FLOOR = 0.1  # -20 dB: a mask never takes a bin further down (a residue costs less than a hole)
BLOCK_SECONDS = 30.0
CONTEXT_SECONDS = 1.0  # > the network's reach (65 frames): block edges see what a whole file would


def window() -> np.ndarray:
    return np.sqrt(np.hanning(N_FFT + 1)[:-1]).astype(np.float32)


def stft(x: np.ndarray) -> np.ndarray:
    """(frames, bins) of ``x`` padded by N_FFT each side; frame t starts at t * HOP - N_FFT."""
    xp = np.concatenate([np.zeros(N_FFT, np.float32), np.asarray(x, np.float32),
                         np.zeros(N_FFT + HOP, np.float32)])
    n = 1 + (xp.size - N_FFT) // HOP
    frames = np.lib.stride_tricks.sliding_window_view(xp, N_FFT)[::HOP][:n]
    return np.fft.rfft(frames * window(), axis=1).astype(np.complex64)


def istft(spec: np.ndarray, n: int) -> np.ndarray:
    frames = np.fft.irfft(spec, n=N_FFT, axis=1).astype(np.float32) * window()
    out = np.zeros((spec.shape[0] - 1) * HOP + N_FFT, np.float32)
    k = N_FFT // HOP
    for j in range(k):  # frames j, j+k, ... do not overlap each other: add them as one run
        f = frames[j::k]
        out[j * HOP:j * HOP + f.shape[0] * N_FFT] += f.reshape(-1)
    return out[N_FFT:N_FFT + n]


def features(mag: np.ndarray) -> np.ndarray:
    """(frames, bins) log magnitude less its mean: the level of the recording does not count."""
    lm = np.log(mag + 1e-5)
    out: np.ndarray = (lm - lm.mean()).astype(np.float32)
    return out


@dataclass(frozen=True)
class MaskNet:
    """Weights: ``w{i}`` (out, in, KERNEL) and ``b{i}`` per layer, last a 1x1 to BINS."""

    weights: tuple[np.ndarray, ...]
    biases: tuple[np.ndarray, ...]

    @classmethod
    def load(cls, path: str | Path) -> MaskNet:
        with np.load(path) as z:
            n = sum(1 for k in z.files if k.startswith("w"))
            return cls(tuple(z[f"w{i}"].astype(np.float32) for i in range(n)),
                       tuple(z[f"b{i}"].astype(np.float32) for i in range(n)))

    def mask(self, feats: np.ndarray) -> np.ndarray:
        """(frames, bins) gains in [FLOOR, 1] for (frames, bins) ``features``."""
        h = feats
        last = len(self.weights) - 1
        for i, (w, b) in enumerate(zip(self.weights, self.biases, strict=True)):
            d = DILATIONS[i] if i < last else 1
            y = _conv(h, w, b, d)
            if i == 0 or i == last:
                h = y
            else:  # residual blocks
                h = h + y
            if i < last:
                h = np.maximum(h, 0.0)
        gain = FLOOR + (1 - FLOOR) / (1 + np.exp(-np.clip(h, -30, 30)))
        out: np.ndarray = gain.astype(np.float32)
        return out


def _conv(h: np.ndarray, w: np.ndarray, b: np.ndarray, d: int) -> np.ndarray:
    """'same' 1-D convolution over time of (frames, in) by (out, in, k), dilation ``d``."""
    k = w.shape[2]
    if k == 1:
        out1: np.ndarray = h @ w[:, :, 0].T + b
        return out1
    pad = d * (k - 1) // 2
    hp = np.concatenate([np.zeros((pad, h.shape[1]), h.dtype), h,
                         np.zeros((pad, h.shape[1]), h.dtype)])
    t = h.shape[0]
    stacked = np.concatenate([hp[j * d:j * d + t] for j in range(k)], axis=1)
    out: np.ndarray = stacked @ w.transpose(2, 1, 0).reshape(k * w.shape[1], w.shape[0]) + b
    return out


def separate_block(x: np.ndarray, net: MaskNet) -> np.ndarray:
    spec = stft(x)
    mag = np.abs(spec)
    return istft(spec * net.mask(features(mag)), x.size)


def separate(audio: np.ndarray, net: MaskNet, gate: float) -> tuple[np.ndarray, int]:
    """(``audio`` (16 kHz) with the mask applied in each block the held-tone gate calls music;
    the number of blocks so treated)."""
    from services.asr.music import blocks

    x = np.asarray(audio, np.float32)
    if x.size == 0:
        return x, 0
    out, treated = [], 0
    for a, b, lo, hi in blocks(x.size, BLOCK_SECONDS, CONTEXT_SECONDS):
        if _held_share(x[lo:hi]) < gate:
            out.append(x[a:b])
            continue
        treated += 1
        out.append(separate_block(x[lo:hi], net)[a - lo:b - lo])
    return np.concatenate(out), treated


def _held_share(x: np.ndarray) -> float:
    """The share of ``x``'s frames with a held tone: the held-tone gate's measure of a bed."""
    from services.asr.music import _stft, held_bins

    held = held_bins(20 * np.log10(np.abs(_stft(x)) + 1e-9))
    return float(held.any(axis=1).mean()) if held.size else 0.0
