"""The input around a segment that the writer hands the music score: the file's margin either
side of a whole segment, and for a piece cut out of one the rest of its segment, then the
file's, as much as the margin."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from services.enhance.segments import CutSegment, SegmentSpec
from services.enhance.writer import EnhancedWriter

RATE = 100  # samples a second: small numbers to read


def _writer() -> EnhancedWriter:
    w = object.__new__(EnhancedWriter)  # only the around bookkeeping is exercised
    w.in_rate, w._around, w.annotator = RATE, {}, object()  # type: ignore[assignment]
    w._behind = type("Q", (), {"put": lambda self, item: None})()  # type: ignore[assignment]
    return w


def test_whole_segment_and_piece_surroundings() -> None:
    w = _writer()
    spec = SegmentSpec("k", 0, start=10.0, end=12.0, text="", language="en")
    seg = CutSegment(7, spec, 200, np.zeros(0, np.float32))
    left, whole, right = (np.arange(50) - 50.0, np.arange(200) + 0.0,
                          np.arange(50) + 1000.0)  # file before, segment, file after
    w.put(seg, np.zeros(10, np.float32), whole, (left, right))
    a, b = w._around_of(seg, whole)  # the whole segment: the file's margins
    assert a.tolist() == left.tolist() and b.tolist() == right.tolist()
    piece = replace(seg, spec=replace(spec, start=10.5, end=11.0, part=1))
    a, b = w._around_of(piece, whole[50:100])  # 0.5-1.0 s into the segment
    assert a.tolist() == whole[0:50].tolist() and b.tolist() == whole[100:150].tolist()
    first = replace(seg, spec=replace(spec, start=10.0, end=10.2, part=2))
    a, b = w._around_of(first, whole[:20])  # at the segment's start: the file's, then its own
    assert a.tolist() == left.tolist() and b.tolist() == whole[20:70].tolist()
    assert w._around_of(replace(seg, serial=8), whole) is None  # none handed for this one
