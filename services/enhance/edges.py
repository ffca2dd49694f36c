"""A piece's edges trimmed where two voices sound at once (``quality/overlap.py``'s frames).

A cut at a speaker change (``turns.py``) lies between words. Where the talkers overlap (one
answers before the other has finished), the pieces either side of the cut still hold the other
voice for the overlapped stretch, and no cut between words clears it: a piece has to lose that
stretch and its words (docs/quality.md, speaker changes). The overlap test's frames (40 ms,
20 ms hop: both voices voiced at once with periods apart) locate it. Within ``window`` seconds
of a piece's start, the piece then starts after the last frame that fires there, at the first
word starting after it; within ``window`` of its end, it ends before the first frame firing
there, at the last word ending before it. The words of the trimmed stretch go with it, so the
piece's text, words and times agree; a piece left with no word or under ``MIN_PIECE`` is
dropped. The audio is cut in the middle of the gap between the last word dropped and the first
kept (word edges are not exact), never inside the firing frame.

``window`` bounds what a false firing can cost: frames fire now and then on one voice too (every
firing on the spliced conversations, which have no overlap, is one), and a firing deep inside a
piece says nothing about its edge. Most false firings are one frame alone, while a real overlap
fires a run of frames (:func:`runs`: on pyannote's call, the runs lie in 3 of its overlaps and
none outside one): a piece is dropped whole only where a run fires in it; one that isolated
frames alone would empty is kept as it is. The runs are also where a segment is cut when no
pause or word gap lies at a turn change (``cuts.py``).
"""

from __future__ import annotations

import numpy as np

from common.shards.audio import resample
from services.enhance.quality import overlap
from services.enhance.turns import MIN_PIECE, Piece

FRAME_HOP = overlap.HOP / overlap.SR  # 20 ms between frame starts
FRAME_SPAN = overlap.N / overlap.SR  # 40 ms a frame
DEFAULT_WINDOW = 0.5  # seconds at each edge; docs/quality.md has how it was chosen
RUN_FRAMES = 2  # firing frames that make a run
RUN_WITHIN = 0.1  # seconds at most between the starts of a run's frames


def firing(x: np.ndarray, rate: int, device: str = "cpu") -> np.ndarray:
    """Start times (seconds from the clip's start) of the frames of ``x`` (at ``rate``) where
    two voices sound at once."""
    return fires(overlap.frames(resample(x, rate, overlap.SR), device))


def fires(frames: overlap.Frames) -> np.ndarray:
    """Start times (seconds from the clip's start) of ``frames`` where two voices sound at once
    (the writer keeps the frames: the piece's overlap annotation is taken from them)."""
    return np.flatnonzero(frames.two) * FRAME_HOP


def runs(fires: np.ndarray, min_frames: int = RUN_FRAMES,
         within: float = RUN_WITHIN) -> list[np.ndarray]:
    """The runs of at least ``min_frames`` firing frames whose starts lie at most ``within`` s
    apart (``fires`` sorted)."""
    if fires.size == 0:
        return []
    breaks = np.flatnonzero(np.diff(fires) > within) + 1
    return [r for r in np.split(fires, breaks) if r.size >= min_frames]


def overlaps(fires: np.ndarray, min_frames: int = RUN_FRAMES,
             within: float = RUN_WITHIN) -> list[float]:
    """The middles of the runs (:func:`runs`)."""
    return [float(r[0] + r[-1] + FRAME_SPAN) / 2 for r in runs(fires, min_frames, within)]


def trim(p: Piece, fires: np.ndarray, offset: float, window: float = DEFAULT_WINDOW,
         min_piece: float = MIN_PIECE) -> Piece | None:
    """``p`` with its edges trimmed at the frames starting at ``fires`` (seconds, from the
    segment's start like ``p``'s times); ``offset``: the segment's start in the member (its
    words' times are the member's). ``p`` itself when nothing fires within ``window`` of an
    edge; None when nothing would be left."""
    words = [(w.start - offset, w.end - offset) for w in p.words]
    start, end = p.start, p.end
    first, last = 0, len(words)  # the words kept: words[first:last]
    head = fires[(fires + FRAME_SPAN > start) & (fires < start + window)]
    if head.size:
        t = float(head.max()) + FRAME_SPAN
        first = next((i for i, (a, _) in enumerate(words) if a >= t), len(words))
        start = t if first in (0, len(words)) else max(
            t, min(words[first][0], (words[first - 1][1] + words[first][0]) / 2))
    tail = fires[(fires >= start) & (fires < end) & (fires + FRAME_SPAN > end - window)]
    if tail.size and first < len(words):
        t = float(tail.min())
        last = next((i for i in range(first, len(words)) if words[i][1] > t), len(words))
        end = t if last in (first, len(words)) else min(
            t, max(words[last - 1][1], (words[last - 1][1] + words[last][0]) / 2))
    if not head.size and not tail.size:
        return p
    if last <= first or end - start < min_piece:
        return None
    return Piece(round(start, 3), round(end, 3), p.words[first:last])


def trim_all(parts: list[Piece], fires: np.ndarray, offset: float,
             window: float = DEFAULT_WINDOW) -> list[Piece]:
    """Each piece trimmed (:func:`trim`), those left with nothing dropped where a run of frames
    (:func:`runs`) fires in them; where only isolated frames do, the piece is kept whole."""
    dense = np.concatenate(runs(fires) or [np.zeros(0)])
    out = []
    for p in parts:
        got = trim(p, fires, offset, window)
        if got is None and not np.any((dense + FRAME_SPAN > p.start) & (dense < p.end)):
            got = p  # one frame firing alone is weak evidence to lose a whole turn on
        if got is not None:
            out.append(got)
    return out
