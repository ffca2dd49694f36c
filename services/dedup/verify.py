"""Confirming candidate pairs with their acoustic fingerprints.

Pairs come a chunk at a time; the fingerprints a chunk needs are gathered first, each shard's
signature file read once for the chunk (pairs join random shards: a stock phrase's speakers are
anywhere in the corpus), and only the rows needed are kept: memory is a chunk's fingerprints.
The comparisons are spread over worker processes (``dedup_confirm_workers``): at corpus scale
they are most of the work.
"""

from __future__ import annotations

import logging
import multiprocessing
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass

import numpy as np

from services.dedup.fingerprint import FRAMES_PER_SECOND, compare
from services.dedup.index import ROW_BITS

log = logging.getLogger(__name__)
ROW_MASK = (1 << ROW_BITS) - 1
# a pair whose subsampled BER is this far above the threshold is not looked at further
SCREEN_MARGIN = 0.1
PARALLEL_MIN = 500  # pairs per worker below which sending them costs more than it saves

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


def confirm(pairs: list[tuple[int, int]], loader: Loader, rule: Rule,
            pool: Executor | None = None,
            workers: int = 1) -> tuple[list[tuple[int, int, float]], int]:
    """The pairs judged the same recording, each scored ``1 - ber / 0.5`` (1: identical
    fingerprints, 0: unrelated audio), and how many pairs could not be checked. With a process
    ``pool``, the comparisons are split into ``workers`` slices, each sent with only the
    fingerprints it needs (the reading stays here: one pass over each shard's file)."""
    fps = gather({x for p in pairs for x in p}, loader)
    usable = [p for p in pairs if p[0] in fps and p[1] in fps]
    unchecked = len(pairs) - len(usable)
    if pool is None or workers < 2 or len(usable) < 2 * PARALLEL_MIN:
        return check(usable, fps, rule), unchecked
    size = -(-len(usable) // workers)
    slices = [usable[i:i + size] for i in range(0, len(usable), size)]
    try:
        futures = [pool.submit(check, sl, {x: fps[x] for p in sl for x in p}, rule)
                   for sl in slices]
        return [e for f in futures for e in f.result()], unchecked
    except BrokenProcessPool as e:  # e.g. a main script spawn cannot import: check them here
        log.warning("confirmation workers unavailable (%s); confirming in this process", e)
        return check(usable, fps, rule), unchecked


def check(pairs: list[tuple[int, int]], fps: dict[int, np.ndarray],
          rule: Rule) -> list[tuple[int, int, float]]:
    out: list[tuple[int, int, float]] = []
    for a, b in pairs:
        m = compare(fps[a], fps[b], rule.max_shift, rule.min_overlap,
                    rule.max_ber + SCREEN_MARGIN)
        if m.ber <= rule.max_ber:
            out.append((a, b, round(max(0.0, 1.0 - m.ber / 0.5), 4)))
    return out


def confirm_pool(workers: int) -> Executor | None:
    """Worker processes for :func:`confirm` (None for one: it runs here). Spawned, not forked:
    the parent holds DuckDB's threads."""
    if workers < 2:
        return None
    return ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"))
