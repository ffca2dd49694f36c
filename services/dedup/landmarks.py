"""The acoustic candidate keys of a signature: MinHash over spectral-peak landmarks.

Text keys find a copy only when both copies were transcribed alike; a noisy, band-limited or
re-encoded copy is often not. These keys find it from the audio: the strongest local peaks of
the telephone-band spectrogram (the one the fingerprint uses), each paired with the next few
peaks within 0.77 s, give landmarks ``(frequency, frequency step, time step)`` (the Shazam
construction): what a codec, a telephone channel, gain or 20 dB of noise leave in place; only
time steps are kept, not times, though a shift of a fraction of a frame still moves some peaks.
Another voice saying the same words puts its peaks at other harmonics and formants. Time steps
are quantised on two grids half a step apart, so a peak moved by a frame keeps one of its two
landmarks; and the peaks are taken from two spectrograms half a hop apart, so a cut or a pad
that moves the frames by part of a hop is never more than a quarter hop from one of them. A
MinHash of the set gives LSH keys (:mod:`services.dedup.minhash`) in their own family, beside
the text's in the index; a segment of :data:`SHORT_SECONDS` or less gets a second, looser
family over the same set (:func:`audio_key_families`).

Measured on real speech (docs/dedup.md): landmark-set Jaccard 0.5-1.0 on average between a
recording and its re-encoded, telephone-band or noisy copies, about 0.001 between unrelated
clips. These keys only propose pairs; the fingerprint decides (:mod:`services.dedup.verify`).

Every constant here is part of the signature format (:data:`AUDIO_VERSION`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from services.dedup.fingerprint import FRAME, HI_HZ, HOP, LO_HZ, RATE, power_of, telephone_rate
from services.dedup.minhash import MinHashFamily

POOL = 4  # spectrum bins pooled: 31 Hz
DT, DF = 10, 4  # a peak is the largest value within +-DT frames and +-DF pooled bins
ABOVE_DB = 6.0  # ... and this far above its frame's median
PER_SECOND = 8  # the strongest peaks kept, per second of audio
FAN = 4  # each peak is paired with the next FAN peaks ...
MAX_DT = 48  # ... within this many frames (0.77 s)
DTQ = 6  # time steps quantised to 96 ms, on two grids half a step apart
WINDOW = 16  # following peaks looked at for a pair
MIN_LANDMARKS = 16  # fewer distinct landmarks: no keys (silence; a steady tone gives about 8)
PHASES = 2  # spectrograms this many per hop, evenly apart: any cut is a quarter hop from one
PHASE_STARTS = tuple(k * HOP // PHASES for k in range(PHASES))  # their first samples
BANDS = 20
ROWS = 4
FAMILY = MinHashFamily("audio-", BANDS, ROWS, band_base=1000)
# A segment this short holds a few dozen landmarks, and a 0.5 s cut takes a third of its audio
# and often half of them (speech is dense where it starts): Jaccard 0.15-0.25 with its original,
# where 4-value bands rarely agree. Its landmarks get a second family of 3-value bands too;
# unrelated short clips sit at J 0.0005 on average (docs/dedup.md: the candidate rate it costs).
SHORT_SECONDS = 3.0
SHORT_BANDS = 50
SHORT_ROWS = 3
SHORT_FAMILY = MinHashFamily("short-", SHORT_BANDS, SHORT_ROWS, band_base=3000)
AUDIO_VERSION = (f"lm{POOL}-{DT}x{DF}-{PER_SECOND}-{FAN}-{MAX_DT}q{DTQ}x2p{PHASES}-"
                 f"mh{BANDS}x{ROWS}-s{SHORT_SECONDS:g}mh{SHORT_BANDS}x{SHORT_ROWS}")

_FREQS = np.fft.rfftfreq(FRAME, 1.0 / RATE)
_SEL = np.nonzero((_FREQS >= LO_HZ) & (_FREQS < HI_HZ))[0]
_NBINS = _SEL.size // POOL
_SEL = _SEL[:_NBINS * POOL]


def _window_max(p: np.ndarray, w: int) -> np.ndarray:
    """``out[i] = max(p[i:i + w])`` along the first axis, by doubling: log2(w) passes."""
    m, width = p, 1
    while width * 2 <= w:
        m = np.maximum(m[:-width], m[width:])
        width *= 2
    if width < w:
        m = np.maximum(m[:-(w - width)], m[w - width:])
    return m


def _local_max(s: np.ndarray) -> np.ndarray:
    """Max over +-DT frames and +-DF bins (edges padded with -inf)."""
    p = np.pad(s, ((DT, DT), (DF, DF)), constant_values=-np.inf)
    m = _window_max(p, 2 * DT + 1)
    return _window_max(m.T, 2 * DF + 1).T


def peaks(power: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(frame, pooled bin) of the strongest peaks, in time order."""
    if power.shape[0] == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    p = power[:, _SEL].reshape(power.shape[0], _NBINS, POOL).sum(axis=2)
    s = 10.0 * np.log10(p + 1e-10)
    mid = s.shape[1] // 2  # the median of an odd count of bins
    floor = np.partition(s, mid, axis=1)[:, mid:mid + 1] + ABOVE_DB
    t, f = np.nonzero((s == _local_max(s)) & (s > floor))
    keep = max(1, int(PER_SECOND * power.shape[0] * HOP / RATE))
    order = np.sort(np.argsort(-s[t, f], kind="stable")[:keep])
    return t[order], f[order]


def landmarks(t: np.ndarray, f: np.ndarray) -> np.ndarray:
    """Distinct landmark codes (uint64) of peaks in time order."""
    n = t.size
    if n < 2:
        return np.zeros(0, np.uint64)
    j = np.arange(n)[:, None] + np.arange(1, WINDOW + 1)[None, :]
    inside = j < n
    j = np.minimum(j, n - 1)
    dt = t[j] - t[:, None]
    ok = inside & (dt >= 1) & (dt <= MAX_DT)
    ok &= np.cumsum(ok, axis=1) <= FAN
    i, k = np.nonzero(ok)
    f1, df, step = f[i], f[j[i, k]] - f[i], dt[i, k]
    codes = [(g << 24) | (f1 << 16) | ((df + 128) << 8) | ((step + g * DTQ // 2) // DTQ)
             for g in (0, 1)]
    return _mix(np.unique(np.concatenate(codes).astype(np.uint64)))


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser: small structured codes become well-spread 64-bit hashes."""
    with np.errstate(over="ignore"):
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        out: np.ndarray = x ^ (x >> np.uint64(31))
        return out


def landmark_set(x: np.ndarray, powers: Sequence[np.ndarray] | None = None) -> np.ndarray:
    """Distinct landmark codes of 8 kHz audio over :data:`PHASES` spectrograms a fraction of a
    hop apart (``powers``: :func:`power_of` from each of :data:`PHASE_STARTS`, when the caller
    has them). A copy whose start moved by part of a frame (a cut, a pad) puts its peaks in
    other frames and loses a third of its landmarks at half a hop; with two phases, one of them
    is within a quarter hop of the copy's."""
    if powers is None:
        powers = [power_of(x, s) for s in PHASE_STARTS]
    return np.unique(np.concatenate([landmarks(*peaks(p)) for p in powers]))


def audio_key_families(x: np.ndarray, powers: Sequence[np.ndarray] | None = None
                       ) -> tuple[list[int], list[int]]:
    """The LSH keys of 8 kHz audio's landmarks (``powers``: as :func:`landmark_set`), and the
    short family's for audio up to :data:`SHORT_SECONDS` (else none); none at all when it has
    fewer than :data:`MIN_LANDMARKS`."""
    codes = landmark_set(x, powers)
    if codes.size < MIN_LANDMARKS:
        return [], []
    short = SHORT_FAMILY.keys(codes) if x.size <= SHORT_SECONDS * RATE else []
    return FAMILY.keys(codes), short


def audio_keys_of(x: np.ndarray, powers: Sequence[np.ndarray] | None = None) -> list[int]:
    """Both families' keys (:func:`audio_key_families`) in one list."""
    keys, short = audio_key_families(x, powers)
    return keys + short


def collision_probability(jaccard: float, short: bool) -> float:
    """The chance that two segments whose landmark sets have this Jaccard share an audio key
    (``short``: both have the short family's keys too)."""
    miss = (1.0 - jaccard ** ROWS) ** BANDS
    if short:
        miss *= (1.0 - jaccard ** SHORT_ROWS) ** SHORT_BANDS
    return 1.0 - miss


def audio_keys(audio: np.ndarray, rate: int) -> list[int]:
    return audio_keys_of(telephone_rate(audio, rate))
