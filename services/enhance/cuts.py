"""A segment's pieces: where it is cut at speaker changes (``turns.py``) and how their edges are
trimmed where two voices overlap (``edges.py``), from its speaker windows, words and the overlap
test's firing frames (docs/quality.md, speaker changes).

The candidate cuts are the pauses, the gaps between words and, with ``overlap_cuts``, the runs
of firing frames (two voices at once: one talker answering before the other has finished, with
no pause or word gap to cut at). A cut at a run that stands is then trimmed like any edge
there: both pieces lose the overlapped stretch and the words that straddle it. In a segment where a
change stands (it holds two voices at least), a cut lying in a gap of at least ``WIDE_GAP``
between words then stands unless the stretches either side are at least ``gap_threshold``
alike (above the plain threshold): a long silence there is where talkers take turns, and two
voices Resemblyzer barely tells apart (pyannote's call: in one segment 0.81-0.86 alike,
stretches of one of them 0.86-0.92) would merge there. A segment with no change stays whole: a
reader's pauses between sentences are not cut (stretches of one voice can be 0.86 alike).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from services.enhance.edges import DEFAULT_WINDOW, overlaps, trim_all
from services.enhance.quality.speaker import Windows
from services.enhance.segments import SegmentSpec
from services.enhance.turns import (
    DEFAULT_THRESHOLD,
    FRAME,
    Piece,
    changes,
    in_gaps,
    pauses,
    pieces,
    word_gaps,
)

WIDE_GAP = 0.3  # seconds between words that make a cut there harder to merge
DEFAULT_GAP_THRESHOLD = 0.90  # docs/quality.md has how it was chosen


@dataclass(frozen=True)
class CutSettings:
    """How segments are cut (``ONSEI_QUALITY_SPEAKER_CHANGE_*``, ``ONSEI_QUALITY_OVERLAP_*``)."""

    threshold: float = DEFAULT_THRESHOLD  # cosine between stretches below which a cut stands
    gap_threshold: float | None = DEFAULT_GAP_THRESHOLD  # the same in a wide gap (None: same)
    trim_window: float = DEFAULT_WINDOW  # seconds at a piece's edges (0: not trimmed)
    overlap_cuts: bool = True  # runs of firing frames are candidate cuts

    @property
    def needs_fires(self) -> bool:
        return self.trim_window > 0 or self.overlap_cuts


DEFAULT_CUTS = CutSettings()


def segment_pieces(spec: SegmentSpec, w: Windows, fires: np.ndarray | None,
                   cfg: CutSettings) -> tuple[list[Piece], list[Piece]]:
    """(the segment's pieces cut at its speaker changes, those pieces trimmed at overlapping
    edges); ``fires``: the firing frames' starts from the segment's start (None: not
    computed, nothing trimmed and no run a candidate)."""
    words = spec.words or []
    cand = pauses(w.power) + word_gaps(words, spec.start)
    if fires is not None and cfg.overlap_cuts:
        cand += [round(t / FRAME) for t in overlaps(fires)]
    found = changes(w, cand, cfg.threshold)
    if found and cfg.gap_threshold is not None:  # two voices in it: its wide gaps weigh more
        found = changes(w, cand, cfg.threshold, wide=in_gaps(cand, words, spec.start, WIDE_GAP),
                        wide_threshold=cfg.gap_threshold)
    parts = pieces(spec, found)
    if fires is None or cfg.trim_window <= 0:
        return parts, parts
    return parts, trim_all(parts, fires, spec.start, cfg.trim_window)
