"""Confirming candidate pairs with their acoustic fingerprints.

Pairs come a chunk at a time; the fingerprints a chunk needs are gathered first, each shard's
signature file read once for the chunk (pairs join random shards: a stock phrase's speakers are
anywhere in the corpus), and only the rows needed are kept: memory is a chunk's fingerprints.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from services.dedup.fingerprint import FRAMES_PER_SECOND, compare
from services.dedup.index import ROW_BITS

ROW_MASK = (1 << ROW_BITS) - 1

Loader = Callable[[int], Sequence[np.ndarray] | None]


def gather(segs: set[int], loader: Loader) -> dict[int, np.ndarray]:
    """seg -> its fingerprint, for every seg whose shard's file is usable (``loader(shard)``
    returns None for one that is not: a pair with such a segment is never confirmed)."""
    by_shard: dict[int, list[int]] = {}
    for s in segs:
        by_shard.setdefault(s >> ROW_BITS, []).append(s)
    out: dict[int, np.ndarray] = {}
    for shard in sorted(by_shard):
        col = loader(shard)
        if col is None:
            continue
        n = len(col)
        for s in by_shard[shard]:
            row = s & ROW_MASK
            if row < n:
                out[s] = np.array(col[row])  # a copy: the shard's buffer is let go
    return out


@dataclass(frozen=True)
class Rule:
    max_ber: float
    min_overlap: float
    max_shift_seconds: float

    @property
    def max_shift(self) -> int:
        return round(self.max_shift_seconds * FRAMES_PER_SECOND)


def confirm(pairs: list[tuple[int, int]], loader: Loader,
            rule: Rule) -> tuple[list[tuple[int, int, float]], int]:
    """The pairs judged the same recording, each scored ``1 - ber / 0.5`` (1: identical
    fingerprints, 0: unrelated audio), and how many pairs could not be checked."""
    fps = gather({x for p in pairs for x in p}, loader)
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
