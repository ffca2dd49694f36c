"""The acoustic half of a signature: a binary spectral fingerprint of the telephone band.

After resampling to 8 kHz, each 128 ms frame (16 ms hop) gives the energies of 33 bands spaced
evenly in mel between 300 and 3400 Hz; its 32 bits are the signs of the band-to-band energy
difference's change from the previous frame (Haitsma & Kalker's construction). What survives
every copy of one recording (codecs, a telephone channel, gain, noise at 20 dB SNR) is which
band gains on its neighbour from frame to frame; another speaker saying the same words has
other formants, so about half the bits differ. Two fingerprints are compared at every
alignment within ``max_shift`` frames (trimmed, padded or moved boundaries), on their overlap:
the bit error rate (BER) is about 0.5 for unrelated audio and far lower for copies.

32 bits every 16 ms: 250 bytes per second of speech. Every constant here is part of the
signature format (:data:`FP_VERSION`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from common.shards.audio import resample

RATE = 8000
FRAME = 1024
HOP = 128
NBANDS = 33
LO_HZ, HI_HZ = 300.0, 3400.0
FP_VERSION = f"hk32-{RATE}-{FRAME}-{HOP}"
FRAMES_PER_SECOND = RATE / HOP

BITS = NBANDS - 1


def _mel(f: np.ndarray) -> np.ndarray:
    return 2595.0 * np.log10(1.0 + f / 700.0)


def _band_matrix() -> np.ndarray:
    freqs = np.fft.rfftfreq(FRAME, 1.0 / RATE)
    edges_mel = np.linspace(_mel(np.array(LO_HZ)), _mel(np.array(HI_HZ)), NBANDS + 1)
    edges = 700.0 * (10 ** (edges_mel / 2595.0) - 1.0)
    m = np.zeros((freqs.size, NBANDS), dtype=np.float32)
    for b in range(NBANDS):
        m[(freqs >= edges[b]) & (freqs < edges[b + 1]), b] = 1.0
    return m


_BANDS = _band_matrix()
# Each band is a run of adjacent bins, the runs back to back: its energy is a sum over the run.
# Summed so rather than by ``power @ _BANDS``, which is a BLAS call: OpenBLAS then wakes its
# thread pool (one thread per core) for a small product, and the pool spins on after it, CPU
# that a worker's cores are short of.
_STARTS = np.array([np.flatnonzero(_BANDS[:, b])[0] for b in range(NBANDS)])
_STOP = int(np.flatnonzero(_BANDS[:, -1])[-1]) + 1
assert (np.diff(_STARTS) > 0).all() and int(_BANDS.sum()) == _STOP - _STARTS[0]
HANN = np.hanning(FRAME).astype(np.float32)
_WEIGHTS = (np.uint64(1) << np.arange(BITS, dtype=np.uint64))


def telephone_rate(audio: np.ndarray, rate: int) -> np.ndarray:
    """The audio at the fingerprint's 8 kHz, float32."""
    return resample(np.asarray(audio, dtype=np.float32), rate, RATE)


def power_of(x: np.ndarray, start: int = 0) -> np.ndarray:
    """Power of each 128 ms frame every 16 ms of 8 kHz audio from sample ``start`` on
    ([T, FRAME // 2 + 1], float32; no rows for audio shorter than two frames): shared by the
    fingerprint and the acoustic keys (:mod:`services.dedup.landmarks`)."""
    x = x[start:]
    if x.size < FRAME + HOP:
        return np.zeros((0, FRAME // 2 + 1), dtype=np.float32)
    frames = np.lib.stride_tricks.sliding_window_view(x, FRAME)[::HOP] * HANN
    return (np.abs(np.fft.rfft(frames, axis=1)) ** 2).astype(np.float32)


def power_spectrogram(audio: np.ndarray, rate: int) -> np.ndarray:
    """:func:`power_of` the audio at 8 kHz, from its first sample."""
    return power_of(telephone_rate(audio, rate))


def fingerprint_of(power: np.ndarray) -> np.ndarray:
    """uint32 per frame after the first, from :func:`power_spectrogram`."""
    if power.shape[0] < 2:
        return np.zeros(0, dtype=np.uint32)
    e = np.add.reduceat(power[:, _STARTS[0]:_STOP], _STARTS - _STARTS[0], axis=1)  # [T, 33]
    d = e[:, :-1] - e[:, 1:]
    bits = (d[1:] - d[:-1]) > 0  # [T-1, 32]
    out: np.ndarray = (bits.astype(np.uint64) @ _WEIGHTS).astype(np.uint32)
    return out


def fingerprint(audio: np.ndarray, rate: int) -> np.ndarray:
    """uint32 per 16 ms frame (empty for audio shorter than two frames)."""
    return fingerprint_of(power_spectrogram(audio, rate))


@dataclass(frozen=True)
class Match:
    ber: float  # bit error rate on the overlap at the best alignment (0.5: unrelated)
    offset: int  # frames: b[i + offset] aligns with a[i]
    overlap: float  # overlapping frames / frames of the shorter fingerprint


NO_MATCH = Match(0.5, 0, 0.0)


SCREEN_STEP = 4  # the first look compares every 4th frame of the shorter fingerprint


def compare(a: np.ndarray, b: np.ndarray, max_shift: int, min_overlap: float = 0.5,
            reject_above: float | None = None) -> Match:
    """The best alignment of ``b`` against ``a`` within ``max_shift`` frames either way, among
    those overlapping at least ``min_overlap`` of the shorter one.

    With ``reject_above``, a first look at every 4th frame (a quarter of the work) answers for
    a pair whose best BER there is above it: unrelated audio sits near 0.5 at every alignment,
    and a copy's subsampled BER is its BER within a few hundredths, so only pairs that may be
    copies get the full comparison."""
    if a.size == 0 or b.size == 0:
        return NO_MATCH
    if a.size > b.size:
        m = compare(b, a, max_shift, min_overlap, reject_above)
        return Match(m.ber, -m.offset, m.overlap)
    if reject_above is not None and a.size >= 8 * SCREEN_STEP:
        first = _scan(a, b, max_shift, min_overlap, SCREEN_STEP)
        if first.ber > reject_above:
            return first
    return _scan(a, b, max_shift, min_overlap, 1)


def _scan(a: np.ndarray, b: np.ndarray, max_shift: int, min_overlap: float,
          step: int) -> Match:
    n = a.size  # a is the shorter
    lo, hi = -max_shift, max_shift + (b.size - n)  # offsets that may overlap enough
    pad = max(0, -lo) + n
    sentinel = np.zeros(pad * 2 + b.size, dtype=np.uint32)
    valid = np.zeros(sentinel.size, dtype=bool)
    sentinel[pad:pad + b.size] = b
    valid[pad:pad + b.size] = True
    start = pad + lo
    count = hi - lo + 1
    win = np.lib.stride_tricks.sliding_window_view(sentinel, n)[start:start + count, ::step]
    ok = np.lib.stride_tricks.sliding_window_view(valid, n)[start:start + count, ::step]
    errors = (np.bitwise_count(win ^ a[None, ::step]) * ok).sum(axis=1, dtype=np.int64)
    overlap = ok.sum(axis=1) * step
    usable = overlap >= max(1, int(np.ceil(min_overlap * n)))
    if not usable.any():
        return NO_MATCH
    ber = np.where(usable, errors * step / np.maximum(overlap, 1) / BITS, 1.0)
    i = int(np.argmin(ber))
    return Match(float(ber[i]), lo + i, min(1.0, float(overlap[i]) / n))
