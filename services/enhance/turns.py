"""Speaker changes inside a kept segment, and the segment cut there (its text split by word times).

An ASR segment can run across a turn change (two people 0.5 s apart read as one sentence). A
segment must hold one voice: TTS pairs a prompt with a target of the same speaker, and the
speaker labels (``speakers.py``) give a whole segment one label.

How: the restored segment's Resemblyzer embeddings of 1.0 s windows every 0.25 s
(``SpeakerEncoder.windows``) and its pauses. The candidate cuts are the pauses (runs of frames
``QUIET_DB`` below the segment's loud frames, at least ``MIN_PAUSE`` long) and the gaps between
the ASR words at least ``MIN_WORD_GAP`` long; they split the segment into stretches, each the
normalised mean of the voiced windows centred in it. Neighbouring stretches are merged, the
most alike first (bottom-up, as one would join lines of one voice), while their cosine similarity
is at least the threshold; the cuts left standing are speaker changes. A stretch with no voiced
window of its own joins its neighbour. Comparing means of whole stretches, not single windows,
is what makes it work: single 1 s windows of one voice and of two voices overlap in similarity
(docs/quality.md, speaker changes).

The audio is cut at the pause or word gap that stood; each ASR word goes to the piece its
middle lies in (Whisper's word edges can run 0.5 s into a pause; their middles are nearer).
Without word times (``ONSEI_ASR_WORD_TIMESTAMPS=false``) a segment is not cut, and
``multi_speaker`` remains its only flag.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from itertools import pairwise

import numpy as np

from services.enhance.quality.speaker import HOP, SR, Windows
from services.enhance.segments import CutSegment, SegmentSpec
from services.records import Word
from services.text.forms import piece_forms

FRAME = HOP / SR  # 10 ms
DEFAULT_THRESHOLD = 0.84  # cosine between stretch means; docs/quality.md has how it was chosen
QUIET_DB = 30.0
MIN_PAUSE = 0.15  # seconds of quiet that can be a turn change
MIN_WORD_GAP = 0.15  # seconds between two ASR words that can be one
MIN_VOICED = 0.5  # a window takes part if at least this share of its frames is voiced
MIN_PIECE = 0.3  # seconds: a cut leaving less on either side is not made


def pauses(power: np.ndarray, quiet_db: float = QUIET_DB,
           min_frames: int = round(MIN_PAUSE / FRAME)) -> list[int]:
    """Middle frames of the runs of quiet frames at least ``min_frames`` long, inside the clip."""
    if power.size == 0:
        return []
    quiet = power < np.quantile(power, 0.95) * 10 ** (-quiet_db / 10)
    edges = np.flatnonzero(np.diff(np.concatenate([[0], quiet.astype(np.int8), [0]])))
    runs = edges.reshape(-1, 2)  # [start, stop) of each quiet run
    return [int((a + b) // 2) for a, b in runs
            if b - a >= min_frames and a > 0 and b < power.size]


def word_gaps(words: list[Word], start: float, min_gap: float = MIN_WORD_GAP) -> list[int]:
    """Frames (from ``start``) in the middle of gaps of at least ``min_gap`` between words."""
    return [round(((a.end + b.start) / 2 - start) / FRAME)
            for a, b in pairwise(words) if b.start - a.end >= min_gap]


def in_gaps(frames: list[int], words: list[Word], start: float, min_gap: float) -> frozenset[int]:
    """Those of ``frames`` (from ``start``) lying in a gap of at least ``min_gap`` between
    words."""
    spans = [((a.end - start) / FRAME, (b.start - start) / FRAME)
             for a, b in pairwise(words) if b.start - a.end >= min_gap]
    return frozenset(f for f in frames if any(a <= f <= b for a, b in spans))


def changes(w: Windows, candidates: list[int], threshold: float = DEFAULT_THRESHOLD,
            min_voiced: float = MIN_VOICED, wide: frozenset[int] = frozenset(),
            wide_threshold: float | None = None) -> list[int]:
    """The candidate frames left standing as speaker changes (bottom-up merging, above); the
    ``wide`` ones among them (in a long word gap) stand unless the stretches either side are at
    least ``wide_threshold`` alike (the higher of it and ``threshold``). The most alike pair
    over its own threshold is merged first."""
    n = w.power.size
    bounds = [0] + sorted({c for c in candidates if 0 < c < n}) + [n]
    centre = w.starts + w.frames // 2
    use = w.voiced >= min_voiced
    sums, counts = [], []
    for a, b in pairwise(bounds):
        m = use & (centre >= a) & (centre < b)
        sums.append(w.embeds[m].sum(axis=0) if m.any() else np.zeros(w.embeds.shape[1]))
        counts.append(int(m.sum()))
    cuts = bounds[1:-1]
    high = threshold if wide_threshold is None else max(threshold, wide_threshold)
    while cuts:
        sims = [2.0 if counts[i] == 0 or counts[i + 1] == 0 else _cos(sums[i], sums[i + 1])
                for i in range(len(cuts))]
        margin = [s - (high if c in wide else threshold) for s, c in zip(sims, cuts)]
        i = int(np.argmax(margin))
        if margin[i] < 0:
            break
        sums[i:i + 2] = [sums[i] + sums[i + 1]]
        counts[i:i + 2] = [counts[i] + counts[i + 1]]
        del cuts[i]
    return cuts


def _cos(x: np.ndarray, y: np.ndarray) -> float:
    return float(x @ y / max(float(np.linalg.norm(x) * np.linalg.norm(y)), 1e-12))


@dataclass(frozen=True)
class Piece:
    """One voice's part of a segment: ``start``/``end`` in seconds from the segment's start,
    the words spoken in it."""

    start: float
    end: float
    words: list[Word]


def pieces(spec: SegmentSpec, cuts: list[int], min_piece: float = MIN_PIECE) -> list[Piece]:
    """The segment cut at ``cuts`` (frames: a pause or a word gap), each word going to the
    piece its middle lies in; a cut that would leave a piece without a word or under
    ``min_piece`` s is not made. One piece (the whole segment) when nothing is cut."""
    words = spec.words or []
    length = spec.end - spec.start
    whole = [Piece(0.0, length, list(words))]
    if not cuts or len(words) < 2:
        return whole
    centre = np.array([(w.start + w.end) / 2 - spec.start for w in words])
    out: list[Piece] = []
    first, t0 = 0, 0.0
    for c in sorted(cuts):
        t = round(c * FRAME, 3)  # times are written to the ms
        upto = int(np.searchsorted(centre, t))
        if (t - t0 >= min_piece and length - t >= min_piece and upto > first
                and upto < len(words)):
            out.append(Piece(t0, t, words[first:upto]))
            first, t0 = upto, t
    if not out:
        return whole
    return out + [Piece(t0, length, words[first:])]


def text_of(words: list[Word]) -> str:
    return "".join(w.word for w in words).strip()


def cut_segment(seg: CutSegment, after: np.ndarray, after_rate: int,
                before: np.ndarray | None, before_rate: int, parts: list[Piece],
                ) -> list[tuple[CutSegment, np.ndarray, np.ndarray | None]]:
    """``(segment, restored audio, input audio)`` for each piece: the audio sliced at the same
    times, the spec's times, text and words those of the piece, ``part`` numbered from 1 (None
    when one piece is left: the segment keeps its name, only its edges were trimmed)."""
    out = []
    s = seg.spec
    length = s.end - s.start
    for k, p in enumerate(parts, 1):
        whole = p.end >= length  # to the segment's end: its last samples too, whatever rounding
        a_out, b_out = round(p.start * after_rate), None if whole else round(p.end * after_rate)
        piece_in = None
        if before is not None:
            a_in = round(p.start * before_rate)
            piece_in = before[a_in:None if whole else round(p.end * before_rate)]
        text = text_of(p.words)
        spec = replace(s, start=s.start + p.start, end=s.end if whole else s.start + p.end,
                       text=text, words=p.words, part=k if len(parts) > 1 else None,
                       forms=piece_forms(s.forms, text, s.language),
                       min_word_probability=min((w.probability for w in p.words), default=None))
        out.append((replace(seg, spec=spec), after[a_out:b_out], piece_in))
    return out
