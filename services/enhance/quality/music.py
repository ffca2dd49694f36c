"""How much music lies under or instead of a segment's speech: ``quality.music``, 0-1.

A note holds its pitch; speech does not. Music (a bed under a podcast, a video's soundtrack)
leaves spectral peaks that stay in one place for tenths of a second, while a voice's harmonics
glide with its intonation and stop at every consonant, and noise has no stable peak at all. A
*held tone* is a spectral peak between ``LOW_HZ`` and ``HIGH_HZ``, ``PROMINENCE_DB`` above the
mean of its neighbourhood, found within one frequency bin (15.6 Hz) of the same place in at
least ``HOLD_SHARE`` of the 32 ms frames of ``HOLD_SECONDS`` (speech over a note masks it now
and then).

A voice holds a vowel now and then too (a synthetic one more often), but only while it speaks:
the score is the share of the segment's non-speech frames (Silero VAD's 32 ms windows of the
input below 0.5, one window of margin around speech) that a held tone covers. In the
pauses of clean speech there is silence or noise (score 0); under a bed, the music goes on in
them; music alone is all pause to the VAD. The pauses looked in reach past the segment: the
file's audio either side of it (:class:`Around`, enhance's restoration margin, half a second
each side), where a clean file is silent between utterances and a bed goes on. A segment with
under ``MIN_GAP_FRAMES`` pause frames even so (speech right up to and past both ends) is not
judged (None): its held tones are as likely held vowels (a clean prompt or a synthetic voice
scored 0.4-0.9 when they counted), and a bed under it shows in its neighbours. Measured in
bench/wild/music.py and bench/filters.py (docs/quality.md, music).

Pure numpy on the input before restoration (the bed is what the source holds, whatever
restoration made of it), at 8 kHz: one 512-point FFT per 32 ms, about 3 CPU s per audio hour
(16 kHz scored the same and cost twice that: the enhance stage's CPU budget is nearly spent).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

SR = 16000
RATE = 8000  # scored at 8 kHz (pairs of samples averaged): half the FFT work of 16 kHz
N_FFT = 512  # 64 ms: 15.6 Hz bins, fine enough to tell a held note from a gliding harmonic
HOP = 256  # 32 ms: one Silero window
LOW_HZ, HIGH_HZ = 150.0, 3800.0  # a voice's f0 below; the 8 kHz band's edge above
PROMINENCE_DB = 8.0  # a peak this far above the mean of its +-NEIGHBOUR_BINS
NEIGHBOUR_BINS = 12
FLOOR_DB = 50.0  # peaks more than this below the segment's loudest frames are not heard
HOLD_SECONDS = 0.4  # a peak held this long in one place is a note
HOLD_SHARE = 0.8  # in at least this share of its frames (speech over a note masks it)
MIN_SECONDS = 0.5  # shorter segments are not scored (None)
MIN_GAP_FRAMES = 8  # 0.26 s of pauses: fewer, and the segment is not judged
WINDOW = 512  # samples of one VAD verdict (32 ms)


def _peaks(db: np.ndarray) -> np.ndarray:
    """Prominent local maxima of a (frames, bins) dB spectrogram, as a boolean array."""
    n = db.shape[1]
    w = NEIGHBOUR_BINS
    c = np.concatenate([np.zeros((db.shape[0], 1)), np.cumsum(db, axis=1)], axis=1)
    lo = np.clip(np.arange(n) - w, 0, n)
    hi = np.clip(np.arange(n) + w + 1, 0, n)
    local = (c[:, hi] - c[:, lo]) / (hi - lo)
    inner = db[:, 2:-2]
    peak = ((inner > db[:, 1:-3]) & (inner >= db[:, 3:-1])
            & (inner > db[:, :-4]) & (inner >= db[:, 4:]))
    out = np.zeros_like(db, dtype=bool)
    out[:, 2:-2] = peak
    loud = db >= np.percentile(db.max(axis=1), 95) - FLOOR_DB
    prominent: np.ndarray = out & (db - local >= PROMINENCE_DB) & loud
    return prominent


def held_frames(audio: np.ndarray) -> np.ndarray:
    """Which 32 ms frames of ``audio`` (16 kHz) a held tone covers (boolean per frame)."""
    x = np.asarray(audio, np.float32)
    x = 0.5 * (x[0:x.size - 1:2] + x[1::2])  # 8 kHz: the mean of each pair is its low-pass
    n = 1 + (x.size - N_FFT) // HOP if x.size >= N_FFT else 0
    hold = max(2, round(HOLD_SECONDS * RATE / HOP))
    if n < hold:
        return np.zeros(max(n, 0), bool)
    frames = np.lib.stride_tricks.sliding_window_view(x, N_FFT)[::HOP][:n]
    lo, hi = int(LOW_HZ * N_FFT / RATE), int(HIGH_HZ * N_FFT / RATE) + 1
    spec = np.abs(np.fft.rfft(frames * np.hanning(N_FFT).astype(np.float32), axis=1))[:, lo:hi]
    db = 20 * np.log10(spec + 1e-9)
    peaks = _peaks(db)
    near = peaks.copy()  # a peak counts where it or a neighbour bin has one
    near[:, 1:] |= peaks[:, :-1]
    near[:, :-1] |= peaks[:, 1:]
    # frames t..t+hold-1 have a peak at bin k often enough: a note held along time
    run = np.cumsum(np.vstack([np.zeros((1, near.shape[1]), np.int32), near]), axis=0)
    starts = ((run[hold:] - run[:-hold]) >= HOLD_SHARE * hold).any(axis=1)  # n - hold + 1
    s = np.concatenate([[0], np.cumsum(starts)])
    t = np.arange(n)
    first = np.clip(t - hold + 1, 0, starts.size)
    last = np.clip(t + 1, 0, starts.size)
    held: np.ndarray = (s[last] - s[first]) > 0
    return held


def pauses(speech: np.ndarray, n: int) -> np.ndarray:
    """Frames (of ``n``) with no speech window at or next to them: ``speech`` is the VAD's
    verdict per 32 ms window, and frame ``t`` (64 ms) spans windows ``t`` and ``t + 1``."""
    s = np.zeros(n + 2, bool)
    k = min(speech.size, n + 2)
    s[:k] = speech[:k]
    near = s.copy()
    near[1:] |= s[:-1]
    near[:-1] |= s[1:]
    return ~(near[:n] | near[1:n + 1])


@dataclass
class Around:
    """The input either side of a segment (16 kHz, whole VAD windows: :func:`around`) and the
    VAD's verdict per window of each."""

    left: np.ndarray
    left_speech: np.ndarray
    right: np.ndarray
    right_speech: np.ndarray


def context_pieces(left: np.ndarray, right: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The last whole windows of ``left`` and the first of ``right`` (16 kHz): what the VAD
    reads and :class:`Around` holds."""
    a = left.size - left.size % WINDOW
    return (np.asarray(left[left.size - a:], np.float32),
            np.asarray(right[:right.size - right.size % WINDOW], np.float32))


def _joined(audio: np.ndarray, speech: np.ndarray, ctx: Around) -> tuple[np.ndarray, np.ndarray]:
    """The segment with its surroundings, verdicts aligned: the segment padded to whole
    windows (as the VAD read it) between the two."""
    seg = np.pad(np.asarray(audio, np.float32), (0, speech.size * WINDOW - audio.size)) \
        if speech.size * WINDOW >= audio.size else np.asarray(audio[:speech.size * WINDOW])
    return (np.concatenate([ctx.left, seg, ctx.right]),
            np.concatenate([np.asarray(ctx.left_speech, bool)[:ctx.left.size // WINDOW],
                            speech, np.asarray(ctx.right_speech, bool)[:ctx.right.size // WINDOW]]))


def music_score(audio: np.ndarray, speech: np.ndarray | None = None,
                around: Around | None = None) -> float | None:
    """Share of ``audio``'s (16 kHz) pauses under a held tone, 0-1; ``speech``: the VAD's
    verdict per 32 ms window (None: no pauses known, every frame counts); ``around``: the
    input either side, whose pauses count too. None when the segment is under
    ``MIN_SECONDS``, or has under ``MIN_GAP_FRAMES`` pause frames to judge."""
    if np.asarray(audio).size < MIN_SECONDS * SR:
        return None
    if speech is not None and around is not None:
        audio, speech = _joined(audio, np.asarray(speech, bool), around)
    held = held_frames(audio)
    if not held.size:
        return 0.0
    if speech is None:
        return float(held.mean())
    gaps = pauses(np.asarray(speech, bool), held.size)
    if gaps.sum() >= MIN_GAP_FRAMES:
        return float(held[gaps].mean())
    return None


# the VAD's verdicts per 32 ms window of each clip (16 kHz): quality/vad.py ``windows``
Windows = Callable[[list[np.ndarray]], list[np.ndarray]]


def input_scores(windows: Windows, clips: list[np.ndarray],
                 around: list[tuple[np.ndarray, np.ndarray] | None]) -> list[float | None]:
    """Each input clip's score (16 kHz) with the input either side of it (16 kHz; None: none
    known), the pauses of both from one call of the VAD over all of them. The same call
    scores a segment before restoration (services/enhance/early.py) and a piece of one among
    the annotations (``MusicStep``), so both give one segment the same value."""
    judged = [i for i, x in enumerate(clips) if np.asarray(x).size >= MIN_SECONDS * SR]
    pieces = {i: context_pieces(*a) for i in judged if (a := around[i]) is not None}
    flat = [clips[i] for i in judged] + [x for i in judged if i in pieces for x in pieces[i]]
    verdicts = windows(flat) if flat else []
    ctx = iter(verdicts[len(judged):])
    out: list[float | None] = [None] * len(clips)
    for i, speech in zip(judged, verdicts):
        p = pieces.get(i)
        ar = None if p is None else Around(p[0], next(ctx), p[1], next(ctx))
        out[i] = music_score(clips[i], speech, ar)
    return out
