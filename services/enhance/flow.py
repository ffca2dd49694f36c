"""The enhancement engine: cut segments in, joined outputs out, in order, through packed batches.

Segments arrive (decoded ahead on the reader's thread); their chunks gather in a pool; when the
pool holds about ``rounds`` batches' worth, it is packed into rows and run batch by batch, the
next batch's rows and features being prepared on a helper thread while the model runs. Rows
that do not fill a batch wait for the next round. A segment is yielded once all its chunks are
back, strictly in arrival order, so memory is bounded by the pool and the reorder buffer.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from common.models.clock import ModelClock
from services.enhance.backend import Backend
from services.enhance.chunking import ChunkGeometry, Item, SegmentAssembler, split_segment
from services.enhance.packing import PackStats, Row, pack_rows, take_batches
from services.enhance.segments import CutSegment


class Enhancer:
    def __init__(self, backend: Backend, geom: ChunkGeometry, batch_size: int,
                 rounds: int = 4, clock: ModelClock | None = None) -> None:
        self.backend = backend
        self.geom = geom
        self.batch = max(1, batch_size)
        self.budget = max(1, rounds) * self.batch * geom.window  # pool size that triggers a round
        self.stats = PackStats()
        self.clock = clock or ModelClock()  # the stage's: the engine reads it (model_seconds)
        self.chunks = 0

    def run(self, segments: Iterable[CutSegment]) -> Iterator[tuple[CutSegment, np.ndarray]]:
        """Yield ``(segment, output at backend.out_rate)`` in the order segments arrived."""
        pool: list[Item] = []
        pooled = 0
        pending: dict[int, tuple[CutSegment, SegmentAssembler]] = {}
        order: list[int] = []  # serials in arrival order, not yet yielded
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
                    self._run_batches(batches, pending, prep)
                    pooled = sum(it.length for it in pool)
                    yield from self._emit(order, pending)
            if pool:
                batches, _ = take_batches(pack_rows(pool, self.geom.window), self.batch, final=True)
                self._run_batches(batches, pending, prep)
            yield from self._emit(order, pending)
        assert not pending, f"{len(pending)} segments left unassembled"

    def _emit(self, order: list[int], pending: dict) -> Iterator[tuple[CutSegment, np.ndarray]]:
        while order and pending[order[0]][1].done:
            seg, asm = pending.pop(order.pop(0))
            seg.padded = np.empty(0, np.float32)  # release the input early
            yield seg, asm.out

    def _prepare(self, rows: list[Row]) -> Any:
        return self.backend.prepare(np.stack([r.array() for r in rows]))

    def _run_batches(self, batches: list[list[Row]], pending: dict,
                     prep: ThreadPoolExecutor) -> None:
        if not batches:
            return
        fut = prep.submit(self._prepare, batches[0])
        r = self.backend.ratio
        for i, rows in enumerate(batches):
            prepared = fut.result()
            if i + 1 < len(batches):  # overlap: next batch's CPU work while the model runs
                fut = prep.submit(self._prepare, batches[i + 1])
            with self.clock.model():
                out = self.backend.run(prepared)
            self.stats.add_batch(rows)
            for row, row_out in zip(rows, out):
                for item, off in row.placed:
                    window_out = row_out[off * r:(off + item.length) * r]
                    pending[item.seg][1].add(item, window_out)
                    item.audio = None
