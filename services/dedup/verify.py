"""Confirming candidate pairs with their acoustic fingerprints.

Fingerprints come from the shards' signature files, a few shards in memory at a time: the
candidates arrive sorted by shard, so each file is read about once per batch.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from services.dedup.fingerprint import FRAMES_PER_SECOND, compare
from services.dedup.index import ROW_BITS

ROW_MASK = (1 << ROW_BITS) - 1


class Fingerprints:
    """``loader(shard)`` -> the shard's fingerprints by row, or None when its file is unusable
    (a pair with such a segment is never confirmed)."""

    def __init__(self, loader: Callable[[int], Sequence[np.ndarray] | None], keep: int = 16) -> None:
        self.loader = loader
        self.keep = keep
        self._cache: OrderedDict[int, Sequence[np.ndarray] | None] = OrderedDict()

    def get(self, seg: int) -> np.ndarray | None:
        shard, row = seg >> ROW_BITS, seg & ROW_MASK
        if shard in self._cache:
            self._cache.move_to_end(shard)
            fps = self._cache[shard]
        else:
            fps = self._cache[shard] = self.loader(shard)
            if len(self._cache) > self.keep:
                self._cache.popitem(last=False)
        if fps is None or row >= len(fps):
            return None
        return fps[row]


@dataclass(frozen=True)
class Rule:
    max_ber: float
    min_overlap: float
    max_shift_seconds: float

    @property
    def max_shift(self) -> int:
        return round(self.max_shift_seconds * FRAMES_PER_SECOND)


def confirm(pairs: list[tuple[int, int]], fps: Fingerprints,
            rule: Rule) -> tuple[list[tuple[int, int, float]], int]:
    """The pairs judged the same recording, each scored ``1 - ber / 0.5`` (1: identical
    fingerprints, 0: unrelated audio), and how many pairs could not be checked."""
    out: list[tuple[int, int, float]] = []
    unchecked = 0
    for a, b in pairs:
        fa, fb = fps.get(a), fps.get(b)
        if fa is None or fb is None:
            unchecked += 1
            continue
        m = compare(fa, fb, rule.max_shift, rule.min_overlap)
        if m.ber <= rule.max_ber:
            out.append((a, b, round(max(0.0, 1.0 - m.ber / 0.5), 4)))
    return out, unchecked
