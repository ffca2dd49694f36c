"""Held-tone suppression: the notes of a music bed taken out of the audio Whisper decodes.

A note holds its pitch; speech does not. Under a bed, Whisper base mishears words it gets right
in the clean copy, and the held notes (the stationary part of the music) hurt it most: on the
Debian game tracks of bench/wild/music.py, the bed with its 0.6 s-median part taken out (the
speech untouched) read 1.28x clean WER at 5 dB, against 2.13x whole. No weights are needed to find
them: a *held tone* is a spectral peak ``PROMINENCE_DB`` above the mean of its neighbourhood,
in one 15.6 Hz bin (or the next) in at least ``HOLD_SHARE`` of the frames of ``HOLD_SECONDS``
(the same idea as enhance's ``quality.music``, here at 16 kHz and per bin, not per frame).

Only those bins (and ``WIDEN_BINS`` either side: a Hann window's main lobe) are touched. The
note's level is a low quantile of the bin's magnitude over ``LEVEL_SECONDS`` (speech over the
note raises the bin only now and then), times ``OVER``; a Wiener gain takes that power out,
no deeper than ``FLOOR_DB``, and the original phase is kept. Everything else passes unchanged.

Per block of ``BLOCK_SECONDS``, and only where music is found: clean speech holds a vowel now
and then, so a few of its frames have a held tone (LibriVox readings: 30-50 % of a 30 s block's
frames), while under a bed nearly all do (88-100 % at 20, 10 and 5 dB). A block with less than
``gate`` of its frames held passes untouched, so clean speech is decoded as before. Blocks are
processed with ``CONTEXT_SECONDS`` of audio either side and joined, so memory is bounded by the
block whatever the file's length. Pure numpy; measured in docs/asr.md (music): it helped under
one order of the bench's tracks and hurt under another, so ``asr_music_suppression`` is off by
default.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np

from common.shards.spool import joined

SR = 16000
N_FFT = 1024  # 64 ms: 15.6 Hz bins, fine enough to tell a held note from a gliding harmonic
HOP = 256  # 16 ms
LOW_HZ = 80.0  # below: hum and rumble, not notes Whisper hears as words
PROMINENCE_DB = 8.0  # a peak this far above the mean of its +-NEIGHBOUR_BINS
NEIGHBOUR_BINS = 12
FLOOR_DB = 50.0  # peaks more than this below the block's loudest frames are not heard
HOLD_SECONDS = 0.4  # a peak held this long in one place is a note
HOLD_SHARE = 0.8  # in at least this share of its frames (speech over a note masks it)
WIDEN_BINS = 2  # the note's main lobe either side of its peak bin
LEVEL_SECONDS = 0.6  # the note's level: a low quantile of the bin over this long
LEVEL_QUANTILE = 0.3
OVER = 2.0  # the note's power is over-estimated: a residue of it costs more than a dent
MAX_CUT_DB = 20.0  # the gain never goes below -MAX_CUT_DB
BLOCK_SECONDS = 30.0
QUANTILE_ROWS = 256  # frames per partition: 256 x 513 x 37 floats (19 MB) at a time
CONTEXT_SECONDS = 1.0  # > the hold and level windows: a block's edges see what a whole file would


def _window() -> np.ndarray:
    # sqrt-Hann at analysis and synthesis: their product overlap-adds to a constant
    return np.sqrt(np.hanning(N_FFT + 1)[:-1]).astype(np.float32)


def _stft(x: np.ndarray) -> np.ndarray:
    """(frames, bins) of ``x`` padded by N_FFT each side; frame t starts at t * HOP - N_FFT."""
    xp = np.concatenate([np.zeros(N_FFT, np.float32), x, np.zeros(N_FFT + HOP, np.float32)])
    n = 1 + (xp.size - N_FFT) // HOP
    frames = np.lib.stride_tricks.sliding_window_view(xp, N_FFT)[::HOP][:n]
    return np.fft.rfft(frames * _window(), axis=1).astype(np.complex64)


def _istft(spec: np.ndarray, n: int) -> np.ndarray:
    frames = np.fft.irfft(spec, n=N_FFT, axis=1).astype(np.float32) * _window()
    size = (spec.shape[0] - 1) * HOP + N_FFT
    out = np.zeros(size, np.float32)
    k = N_FFT // HOP
    for j in range(k):  # frames j, j+k, ... do not overlap each other: add them as one run
        f = frames[j::k]
        out[j * HOP:j * HOP + f.shape[0] * N_FFT] += f.reshape(-1)
    return out[N_FFT:N_FFT + n] * (2 * HOP / N_FFT)


def _local_mean(db: np.ndarray, w: int) -> np.ndarray:
    n = db.shape[1]
    c = np.concatenate([np.zeros((db.shape[0], 1), db.dtype), np.cumsum(db, axis=1)], axis=1)
    lo, hi = np.clip(np.arange(n) - w, 0, n), np.clip(np.arange(n) + w + 1, 0, n)
    out: np.ndarray = (c[:, hi] - c[:, lo]) / (hi - lo)
    return out


def held_bins(db: np.ndarray) -> np.ndarray:
    """(frames, bins) boolean: where a held tone sounds in a dB magnitude spectrogram."""
    inner = db[:, 2:-2]
    peaks = np.zeros_like(db, dtype=bool)
    peaks[:, 2:-2] = ((inner > db[:, 1:-3]) & (inner >= db[:, 3:-1])
                      & (inner > db[:, :-4]) & (inner >= db[:, 4:]))
    peaks &= db - _local_mean(db, NEIGHBOUR_BINS) >= PROMINENCE_DB
    peaks &= db >= np.percentile(db.max(axis=1), 95) - FLOOR_DB
    peaks[:, :int(LOW_HZ * N_FFT / SR)] = False
    near = peaks.copy()  # a peak counts where it or a neighbour bin has one
    near[:, 1:] |= peaks[:, :-1]
    near[:, :-1] |= peaks[:, 1:]
    hold = max(2, round(HOLD_SECONDS * SR / HOP))
    if db.shape[0] < hold:
        return np.zeros_like(db, dtype=bool)
    zero = np.zeros((1, db.shape[1]), np.int32)
    run = np.cumsum(np.vstack([zero, near]), axis=0)
    starts = (run[hold:] - run[:-hold]) >= HOLD_SHARE * hold  # frames [t, t + hold) held
    s = np.cumsum(np.vstack([zero, starts]), axis=0)
    t = np.arange(db.shape[0])
    first = np.clip(t - hold + 1, 0, starts.shape[0])
    last = np.clip(t + 1, 0, starts.shape[0])
    held: np.ndarray = (s[last] - s[first]) > 0  # some held window covers frame t
    return held


def _quantile_in_time(mag: np.ndarray, k: int, q: float) -> np.ndarray:
    h = k // 2
    j = round(q * (k - 1))
    padded = np.concatenate([mag[:1].repeat(h, 0), mag, mag[-1:].repeat(h, 0)])
    windows = np.lib.stride_tricks.sliding_window_view(padded, k, axis=0)
    out = np.empty_like(mag)
    for a in range(0, mag.shape[0], QUANTILE_ROWS):  # partition copies: bounded pieces
        out[a:a + QUANTILE_ROWS] = np.partition(windows[a:a + QUANTILE_ROWS], j, axis=-1)[..., j]
    return out


def _gain(mag: np.ndarray, held: np.ndarray) -> np.ndarray:
    notes = held.copy()
    for d in range(1, WIDEN_BINS + 1):
        notes[:, d:] |= held[:, :-d]
        notes[:, :-d] |= held[:, d:]
    k = max(3, round(LEVEL_SECONDS * SR / HOP) | 1)
    level = OVER * _quantile_in_time(mag, k, LEVEL_QUANTILE)
    music = np.where(notes, np.minimum(level, mag), 0.0) ** 2
    speech = np.maximum(mag ** 2 - music, 0.0)
    gain = speech / (speech + music + 1e-12)
    out: np.ndarray = np.maximum(gain, 10 ** (-MAX_CUT_DB / 20)).astype(np.float32)
    return out


def _held(spec: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """(magnitudes, held tones, the share of frames holding one) of a block's STFT."""
    mag = np.abs(spec)
    held = held_bins(20 * np.log10(mag + 1e-9))
    return mag, held, float(held.any(axis=1).mean()) if held.size else 0.0


def held_share(x: np.ndarray) -> float:
    """The share of ``x``'s frames (16 kHz) where a held tone sounds: the music gate's reading
    (clean speech 0.2-0.73, under a bed 0.83-1)."""
    return _held(_stft(np.asarray(x, np.float32)))[2]


def _block(x: np.ndarray, gate: float) -> tuple[np.ndarray, float]:
    """(``x`` with its held tones taken out, or ``x`` itself; the share of frames held)."""
    spec = _stft(x)
    mag, held, share = _held(spec)
    if share < gate:
        return x, share
    return _istft(spec * _gain(mag, held), x.size), share


def suppress(audio: np.ndarray, gate: float) -> tuple[np.ndarray, int]:
    """(``audio`` (16 kHz) with music's held tones taken out where a block of it has a held
    tone in at least ``gate`` of its frames; the number of blocks so treated)."""
    def treat(span: np.ndarray) -> np.ndarray | None:
        y, share = _block(span, gate)
        return y if share >= gate else None

    return treat_blocks(audio, treat)


def treat_blocks(audio: np.ndarray, treat: Callable[[np.ndarray], np.ndarray | None],
                 ) -> tuple[np.ndarray, int]:
    """(``audio`` (16 kHz) with each block replaced by ``treat`` of its span (the block with
    its context, same length back), or left as it is where ``treat`` gives None; the number of
    blocks treated). The one block walk of the music front ends (held tones, separation)."""
    x = audio if audio.dtype == np.float32 else np.asarray(audio, np.float32)
    if x.size == 0:
        return x, 0
    treated = 0

    def parts() -> Iterator[np.ndarray]:
        nonlocal treated
        for a, b, lo, hi in blocks(x.size, BLOCK_SECONDS, CONTEXT_SECONDS):
            y = treat(x[lo:hi])
            treated += y is not None
            yield x[a:b] if y is None else y[a - lo:b - lo]

    out = joined(x, parts())  # a long member's spooled beside it (common/shards/spool.py)
    return (out if treated else x), treated


def blocks(n: int, seconds: float, context: float) -> list[tuple[int, int, int, int]]:
    """``(a, b, lo, hi)`` for each block of ``n`` samples at 16 kHz: the block ``[a, b)`` of
    ``seconds`` and its span ``[lo, hi)`` with ``context`` either side (so a block's edges see
    what a whole file would)."""
    block, ctx = int(seconds * SR), int(context * SR)
    starts = list(range(0, n, block))
    if len(starts) > 1 and n - starts[-1] < block // 2:
        starts.pop()  # a short tail joins the block before: a few held vowels are no bed
    ends = starts[1:] + [n]
    return [(a, b, max(0, a - ctx), min(n, b + ctx)) for a, b in zip(starts, ends)]
