"""Word timestamps of a segment: Whisper's word alignment (cross-attention + DTW, no extra model;
``batched.ClipTranscriber``) in its encoder window, mapped to seconds of the raw member
(windows.split), and the segment's bounds trimmed to them (docs/asr.md, word timestamps).

Whisper's alignment has no gaps: a word starts where the previous one ended, so a pause before
a word is counted in it (measured: starts 0.26 s early, median, on words with pauses between
them). :func:`snapped` therefore moves a word's start to the end of the last pause (80 ms or more
of 10 ms frames ``QUIET_DB`` below the clip's loud frames) in its first half, and its end to
the start of the first pause in its second half; in connected speech there are none and
nothing moves.

The other way, a word can end too early: the full stop after it and the end-of-text token are
aligned too, and at a window's end they take its last second of speech (a window ending on
「ありがとうございます。」: the word 0.44 s long, the rest of the 2 s sentence given to 「。」 and
the end token, both merged away), so the segment trimmed to its words lost most of its last
sentence. :func:`run_on` moves such a word's end on through the speech that follows it without
a pause, where that speech stops before the next word: at a pause, or where its span ends.
Sound that runs on right up to the next word is not the word's: it is the next word's onset
(aligned late), or, in conversation, the other talker answering straight after (a call's
"Jersey." ran 0.73 s into "And", the gap that told the two voices apart closed), so the word
keeps Whisper's end there and the gap stays in the word list.
"""

from __future__ import annotations

import numpy as np

from services.asr.clips import Clip
from services.records import Word

WordTime = tuple[str, float, float, float]  # (word, start, end, probability)
WordTimes = list[WordTime]


SAMPLE_RATE = 16000
FRAME = 160  # 10 ms
QUIET_DB = 30.0  # a frame this far below the clip's loud frames (95th percentile) is quiet
FLOOR_DB = 6.0  # or within this of the quietest frames (10th percentile): background noise
MIN_PAUSE_FRAMES = 8  # 80 ms: longer than a stop's closure in connected speech


def loud_frames(x: np.ndarray) -> np.ndarray:
    """Which 10 ms frames of ``x`` (16 kHz audio) are loud (none under three frames)."""
    x = np.asarray(x, np.float64)
    n = x.size // FRAME
    if n < 3:
        return np.zeros(0, bool)
    db = 10 * np.log10(np.mean(x[:n * FRAME].reshape(n, FRAME) ** 2, axis=1) + 1e-12)
    # quiet: far below the loud frames, or (in noise) near the floor of the quietest frames
    loud: np.ndarray = db >= max(np.percentile(db, 95) - QUIET_DB,
                                 np.percentile(db, 10) + FLOOR_DB)
    return loud


def snapped(words: WordTimes, loud: np.ndarray, offset: float) -> WordTimes:
    """``words`` with starts moved past leading quiet frames and ends before trailing ones;
    ``loud`` (:func:`loud_frames`) of the audio they were spoken in, whose first frame is at
    ``offset`` seconds (a window's start, 0)."""
    n = loud.size
    if n < 3:
        return words
    out = []
    for w, a, b, p in words:
        i, j = _frame(a, offset, n), _frame(b, offset, n)
        if j - i >= 2:
            mid = (i + j) // 2
            # the last pause in the word's first half ends where the word starts; the first
            # pause in its second half starts where it ends
            runs = _quiet_runs(loud, i, mid)
            i = runs[-1][1] if runs else i
            while i < j and not loud[i]:  # a pause across the middle is the leading one
                i += 1
            runs = _quiet_runs(loud, max(mid, i), j)
            j = runs[0][0] if runs else j
        while i < j and not loud[i]:
            i += 1
        while j > i and not loud[j - 1]:
            j -= 1
        if i < j:  # a word with no loud frame at all keeps Whisper's times
            a = max(a, offset + i * FRAME / SAMPLE_RATE)
            b = min(b, offset + j * FRAME / SAMPLE_RATE)
        out.append((w, a, b, p))
    return out


def run_on(words: WordTimes, loud: np.ndarray, limits: list[float]) -> WordTimes:
    """``words`` (seconds of the audio ``loud`` was computed over, from 0) with each end moved
    on through the loud frames right after it, across quiet runs shorter than a pause
    (``MIN_PAUSE_FRAMES``: a stop's closure), to where they stop: a pause before the next
    word's start, or the word's ``limit`` (the end of the speech span it was spoken in). A word
    followed by a pause stays as it is, and so does one whose sound runs on into the next word
    (no pause between them: not this word's sound alone)."""
    n = loud.size
    if n < 3:
        return words
    out = []
    for k, (w, a, b, p) in enumerate(words):
        nxt = _frame(words[k + 1][1], 0.0, n) if k + 1 < len(words) else None
        limit = _frame(limits[k], 0.0, n)
        j, end = _frame(b, 0.0, n), limit if nxt is None else min(limit, nxt)
        first, last, quiet = j, j, 0
        while j < end and quiet < MIN_PAUSE_FRAMES:
            quiet = 0 if loud[j] else quiet + 1
            j += 1
            if not quiet:
                last = j
        into_next = nxt is not None and nxt <= limit and quiet < MIN_PAUSE_FRAMES
        moved = last > first and not into_next
        out.append((w, a, max(b, last * FRAME / SAMPLE_RATE) if moved else b, p))
    return out


def _quiet_runs(loud: np.ndarray, i: int, j: int) -> list[tuple[int, int]]:
    """Runs of at least ``MIN_PAUSE_FRAMES`` quiet frames in ``[i, j)``, as (first, end)."""
    runs, start = [], None
    for k in range(i, j + 1):
        q = k < j and not loud[k]
        if q and start is None:
            start = k
        elif not q and start is not None:
            if k - start >= MIN_PAUSE_FRAMES:
                runs.append((start, k))
            start = None
    return runs


def _frame(t: float, offset: float, n: int) -> int:
    return min(n, max(0, round((t - offset) * SAMPLE_RATE / FRAME)))


def segment_words(clip: Clip, words: WordTimes | None) -> list[Word] | None:
    """``words`` (file seconds, :func:`place`) as records, inside the clip; None when word
    timestamps were off; words with no text are dropped."""
    if words is None:
        return None
    out = []
    for text, a, b, p in words:
        if not text.strip():
            continue
        start = min(max(a, clip.start), clip.end)
        end = min(max(b, start), clip.end)
        out.append(Word(word=text, start=round(start, 3), end=round(end, 3),
                        probability=round(p, 4)))
    return out


def trimmed(clip: Clip, words: list[Word] | None, margin: float,
            keep_end: bool = False) -> tuple[float, float]:
    """The segment's (start, end): the clip's, narrowed to its first word's start and last
    word's end, each widened by ``margin`` (never past the clip). ``keep_end``: the clip ends
    where a truncated file was cut; the end stays."""
    if not words:
        return clip.start, clip.end
    start = max(clip.start, words[0].start - margin)
    end = clip.end if keep_end else min(clip.end, words[-1].end + margin)
    if end - start <= margin:  # an alignment that collapsed: keep the clip
        return clip.start, clip.end
    return start, end
