"""The enhancement engine: cut segments in, joined outputs out, in order, through packed batches.

Segments arrive (decoded ahead on the reader's thread); their chunks gather in a pool; when the
pool holds about ``rounds`` batches' worth, it is packed into rows and run batch by batch, the
next batch's rows and features being prepared on a helper thread while the model runs. Rows
that do not fill a batch wait for the next round.

A segment is finished as soon as its last chunk is back (after any batch, not at the end of the
round): its input is dropped and its output goes through ``finish`` (the stage's: to the
steps' 24 kHz, half the samples of a 48 kHz model's output), then waits only for the segments
before it, and is yielded strictly in arrival order. Memory is bounded by the pool, one batch's
outputs and the segments held behind one left out of its round.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from common.models.clock import ModelClock
from services.enhance.backend import Backend
from services.enhance.chunking import ChunkGeometry, Item, SegmentAssembler, split_segment
from services.enhance.packing import PackStats, Row, pack_rows, take_batches
from services.enhance.segments import CutSegment

_NO_AUDIO = np.empty(0, np.float32)
Pending = tuple[CutSegment, SegmentAssembler]  # a segment and the assembler of its outputs


class Enhancer:
    def __init__(self, backend: Backend, geom: ChunkGeometry, batch_size: int,
                 rounds: int = 4, clock: ModelClock | None = None,
                 finish: Callable[[np.ndarray], np.ndarray] | None = None) -> None:
        self.backend = backend
        self.geom = geom
        self.batch = max(1, batch_size)
        self.budget = max(1, rounds) * self.batch * geom.window  # pool size that triggers a round
        self.stats = PackStats()
        self.clock = clock or ModelClock()  # the stage's: the engine reads it (model_seconds)
        self.finish = finish  # a finished output at out_rate -> what is yielded
        self.chunks = 0

    def run(self, segments: Iterable[CutSegment]) -> Iterator[tuple[CutSegment, np.ndarray]]:
        """Yield ``(segment, output)`` in the order segments arrived: the output at
        ``backend.out_rate``, or what ``finish`` made of it."""
        pool: list[Item] = []
        pooled = 0
        pending: dict[int, Pending] = {}
        ready: dict[int, tuple[CutSegment, np.ndarray]] = {}  # finished, behind an earlier one
        order: deque[int] = deque()  # serials in arrival order, not yet yielded
        with ThreadPoolExecutor(1, thread_name_prefix="enhance-prep") as prep:
            for seg in segments:
                items = split_segment(seg.serial, seg.seg_len, self.geom, seg.padded)
                self.chunks += len(items)
                pending[seg.serial] = (seg, SegmentAssembler(seg.seg_len, len(items),
                                                             self.backend.ratio, self.geom))
                order.append(seg.serial)
                pool.extend(items)
                pooled += sum(it.length for it in items)
                if pooled >= self.budget:
                    batches, pool = take_batches(pack_rows(pool, self.geom.window), self.batch,
                                                 final=False)
                    pooled = sum(it.length for it in pool)
                    yield from self._run_batches(batches, pending, ready, order, prep)
            if pool:
                batches, _ = take_batches(pack_rows(pool, self.geom.window), self.batch, final=True)
                yield from self._run_batches(batches, pending, ready, order, prep)
        assert not pending and not ready, f"{len(pending) + len(ready)} segments left unyielded"

    def _prepare(self, rows: list[Row]) -> Any:
        return self.backend.prepare(np.stack([r.array() for r in rows]))

    def _run_batches(self, batches: list[list[Row]], pending: dict[int, Pending],
                     ready: dict[int, tuple[CutSegment, np.ndarray]], order: deque[int],
                     prep: ThreadPoolExecutor) -> Iterator[tuple[CutSegment, np.ndarray]]:
        if not batches:
            return
        fut = prep.submit(self._prepare, batches[0])
        for i, rows in enumerate(batches):
            prepared = fut.result()
            if i + 1 < len(batches):  # overlap: next batch's CPU work while the model runs
                fut = prep.submit(self._prepare, batches[i + 1])
            with self.clock.model():
                out = self.backend.run(prepared)
            del prepared
            self.stats.add_batch(rows)
            finished = self._collect(rows, out, pending)
            del out  # the batch's output goes before the finished segments are converted
            while finished:  # each 48 kHz output goes as soon as it is converted
                seg, asm = finished.pop()
                seg.padded = _NO_AUDIO  # release the input (the engine's reference)
                ready[seg.serial] = (seg, asm.out if self.finish is None
                                     else self.finish(asm.out))
                del seg, asm
            while order and order[0] in ready:
                yield ready.pop(order.popleft())

    def _collect(self, rows: list[Row], out: np.ndarray,
                 pending: dict[int, Pending]) -> list[Pending]:
        """Join the batch's outputs into their segments; the segments it completed."""
        r = self.backend.ratio
        finished: list[Pending] = []
        for row, row_out in zip(rows, out):
            for item, off in row.placed:
                asm = pending[item.seg][1]
                asm.add(item, row_out[off * r:(off + item.length) * r])
                item.audio = None
                if asm.done:
                    finished.append(pending.pop(item.seg))
        return finished
