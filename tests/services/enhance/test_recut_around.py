"""The input around a segment that the music score looks in: the file's margin either side
of a whole segment (the item as the stage makes it), and for a piece the re-cut makes of one the
rest of its segment, then the file's, as much as the margin."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from services.enhance.chain import Item
from services.enhance.recut import around_piece
from services.enhance.segments import CutSegment, SegmentSpec

RATE = 100  # samples a second: small numbers to read


def test_piece_surroundings() -> None:
    spec = SegmentSpec("k", 0, start=10.0, end=12.0, text="", language="en")
    seg = CutSegment(7, spec, 200, np.zeros(0, np.float32))
    left, whole, right = (np.arange(50) - 50.0, np.arange(200) + 0.0,
                          np.arange(50) + 1000.0)  # file before, segment, file after
    it = Item(seg, np.zeros(10, np.float32), whole, (left, right))
    a, b = around_piece(it, 10.0, whole, RATE)  # the whole segment: the file's margins
    assert a.tolist() == left.tolist() and b.tolist() == right.tolist()
    piece = replace(spec, start=10.5, end=11.0, part=1)
    a, b = around_piece(it, piece.start, whole[50:100], RATE)  # 0.5-1.0 s into the segment
    assert a.tolist() == whole[0:50].tolist() and b.tolist() == whole[100:150].tolist()
    a, b = around_piece(it, 10.0, whole[:20], RATE)  # at its start: the file's, then its own
    assert a.tolist() == left.tolist() and b.tolist() == whole[20:70].tolist()
    assert around_piece(Item(seg, whole, whole), 10.0, whole, RATE) is None  # none handed
