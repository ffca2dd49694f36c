"""The whole pipeline in one process, no broker (``onsei run``): the embedded default.

The same :class:`~common.stages.contract.Stage` classes and :class:`~common.stages.engine.Engine` as
the Celery workers, so outputs, done and failure records are identical. Stage-major order: every
shard through asr, then through enhance, ...: one model in memory at a time, and a stage whose model
cannot be had fails with its message after the earlier stages' outputs are saved. The next
shard's inputs download in a background thread while the model computes (common.stages.prefetch).
A stage is imported only when it is asked for.
"""

from __future__ import annotations

import gc
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from common.ledger.index import valid_done
from common.node.allocator import map_large_buffers, stage_threshold_kb
from common.settings import Settings
from common.stages.contract import Stage
from common.stages.engine import Engine, reason_of
from common.stages.prefetch import Prefetcher
from common.stages.spec import Pipeline
from common.storage import open_store
from services.stages import PIPELINE, open_ledger

log = logging.getLogger(__name__)


@dataclass
class StageSummary:
    stage: str
    processed: list[int] = field(default_factory=list)
    skipped_done: list[int] = field(default_factory=list)
    waiting: list[int] = field(default_factory=list)  # the previous stage is not done
    failed: dict[int, str] = field(default_factory=dict)
    error: str | None = None  # the stage could not run at all (model unavailable)
    not_run: list[int] = field(default_factory=list)  # ready, but the stage could not run
    seconds: float = 0.0
    model_seconds: float = 0.0
    audio_seconds_in: float = 0.0
    audio_seconds_out: float = 0.0


# progress(stage, advance, total) -- total set when a stage starts, advance per shard
Progress = Callable[[str, int, int], None]


class Runner:
    def __init__(self, settings: Settings, stages: list[str], force: bool = False,
                 stage_classes: dict[str, type[Stage]] | None = None,
                 pipeline: Pipeline = PIPELINE) -> None:
        self.settings = settings
        self.pipeline = pipeline
        self.stages = [s for s in pipeline.names if s in stages]  # always in pipeline order
        self.force = force
        self.stage_classes = stage_classes or {}
        self.output = open_store(settings.output_url, settings)
        self.ledger = open_ledger(settings, self.output)

    def _todo(self, stage: str, ids: range, summary: StageSummary) -> list[int]:
        before = self.pipeline.previous(stage)
        # never a set of the range's ids: only done ids (what exists) are held
        ready = ids if before is None else valid_done(self.ledger, before, ids)
        done = set() if self.force else valid_done(self.ledger, stage, ids)
        todo = []
        for i in ids:
            if i not in ready:
                summary.waiting.append(i)
            elif i in done:
                summary.skipped_done.append(i)
            else:
                todo.append(i)
        return todo

    def run_stage(self, name: str, ids: range, progress: Progress | None = None) -> StageSummary:
        summary = StageSummary(name)
        t0 = time.monotonic()
        todo = self._todo(name, ids, summary)
        if progress:
            progress(name, 0, len(todo))
        if not todo:
            return summary
        # this process runs the stages in turn: each its own allocator policy, before its model
        map_large_buffers(stage_threshold_kb(self.pipeline.spec(name).mmap_threshold_kb,
                                             self.settings.worker_mmap_threshold_kb))
        engine = Engine(self.settings, self.pipeline, self.stage_classes.get(name) or name,
                        output_store=self.output, read_ahead=True)
        try:
            engine.load()
        # say why, in the stage's own words; the earlier stages' outputs are saved
        except Exception as e:  # noqa: BLE001
            summary.error = reason_of(e)
            summary.not_run.extend(todo)
            return summary
        pre = Prefetcher(name, engine.fetch, lambda i: False, self.settings)
        for n, shard_id in enumerate(todo):
            if n + 1 < len(todo):
                pre.submit(todo[n + 1])  # download the next while this one computes
            # the listing above was the done check; this shard is either not done or forced
            a = engine.attempt(shard_id, check_done=False)
            if a.status == "sick":  # the node's fault (disk full): every next shard would fail
                summary.error = a.reason
                summary.not_run.extend(todo[n:])
                break
            if a.ok:
                summary.processed.append(shard_id)
                if a.record is not None:
                    summary.model_seconds += a.record.model_seconds
                    summary.audio_seconds_in += a.record.audio_seconds_in
                    summary.audio_seconds_out += a.record.audio_seconds_out
            else:  # this shard failed (and has its record unless it says otherwise); others go on
                summary.failed[shard_id] = a.reason if a.status != "unrecorded" else (
                    f"{a.reason} (not recorded: {reason_of(a.error)})" if a.error else a.reason)
                log.error("%s %s: %s", name, shard_id, summary.failed[shard_id])
            if progress:
                progress(name, 1, len(todo))
        pre.join()
        del engine
        gc.collect()  # one model in memory at a time
        summary.seconds = time.monotonic() - t0
        return summary

    def run(self, ids: range, progress: Progress | None = None) -> list[StageSummary]:
        out = []
        for name in self.stages:
            s = self.run_stage(name, ids, progress)
            out.append(s)
            if s.error:
                break  # later stages would only wait on this one
        return out
