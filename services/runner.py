"""The whole pipeline in one process, no broker (``onsei run``): the embedded default.

The same :class:`~common.stage.Stage` classes and :class:`~common.executor.Executor` as the
Celery workers, so outputs and done records are identical. Stage-major order: every shard
through asr, then through enhance, ...: one model in memory at a time, and a stage whose model
cannot be had fails with its message after the earlier stages' outputs are saved. The next
shard's inputs download in a background thread while the model computes (common.prefetch).
A stage is imported only when it is asked for.
"""

from __future__ import annotations

import gc
import importlib
import inspect
import logging
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field

from common.executor import Executor
from common.prefetch import Prefetcher, discard, fetch_into
from common.redact import redact_text
from common.settings import STAGES, Settings
from common.stage import Stage

log = logging.getLogger(__name__)


def load_stage_class(name: str) -> type[Stage]:
    """``services.<name>.stage``'s Stage subclass whose ``name`` is ``name``."""
    if name not in STAGES:
        raise ValueError(f"unknown stage {name!r} (known: {', '.join(STAGES)})")
    mod = importlib.import_module(f"services.{name}.stage")
    for _, obj in inspect.getmembers(mod, inspect.isclass):
        if issubclass(obj, Stage) and obj is not Stage and getattr(obj, "name", None) == name:
            return obj
    raise LookupError(f"services.{name}.stage defines no Stage with name {name!r}")


@dataclass
class StageSummary:
    stage: str
    processed: list[int] = field(default_factory=list)
    skipped_done: list[int] = field(default_factory=list)
    waiting: list[int] = field(default_factory=list)  # the previous stage is not done
    failed: dict[int, str] = field(default_factory=dict)
    error: str | None = None  # the stage could not run at all (model unavailable)
    seconds: float = 0.0
    model_seconds: float = 0.0
    audio_seconds_in: float = 0.0
    audio_seconds_out: float = 0.0


# progress(stage, advance, total) -- total set when a stage starts, advance per shard
Progress = Callable[[str, int, int], None]


class Runner:
    def __init__(self, settings: Settings, stages: list[str], force: bool = False,
                 stage_classes: dict[str, type[Stage]] | None = None) -> None:
        self.settings = settings
        self.stages = [s for s in STAGES if s in stages]  # always in pipeline order
        self.force = force
        self.stage_classes = stage_classes or {}
        self.executor = Executor(settings)

    def _todo(self, stage: str, ids: range, summary: StageSummary) -> list[int]:
        ledger = self.executor.ledger
        idx = STAGES.index(stage)
        # never a set of the range's ids: only done ids (what exists) are held
        ready = ids if idx == 0 else ledger.done_ids(STAGES[idx - 1], ids)
        done = set() if self.force else ledger.done_ids(stage, ids)
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
        try:
            cls = self.stage_classes.get(name) or load_stage_class(name)
            stage = cls(self.settings)
            stage.load()
        # say why, in the stage's own words; the earlier stages' outputs are saved
        except Exception as e:  # noqa: BLE001
            summary.error = redact_text(f"{type(e).__name__}: {e}")
            summary.waiting.extend(todo)
            return summary
        pre = Prefetcher(cls(self.settings), self.executor.fetch_inputs,
                         lambda i: False, self.settings)
        for n, shard_id in enumerate(todo):
            if n + 1 < len(todo):
                pre.submit(todo[n + 1])  # download the next while this one computes
            try:
                inputs = fetch_into(self.executor.fetch_inputs, stage, shard_id, self.settings)
                out = self.executor.run_shard(stage, shard_id, force=self.force,
                                              prefetched=inputs)
                summary.processed.append(shard_id)
                rec = out.record or {}
                summary.model_seconds += rec.get("model_seconds", 0.0)
                summary.audio_seconds_in += rec.get("audio_seconds_in", 0.0)
                summary.audio_seconds_out += rec.get("audio_seconds_out", 0.0)
            except Exception as e:  # noqa: BLE001 - this shard failed; the others go on
                reason = redact_text(f"{type(e).__name__}: {e}")
                summary.failed[shard_id] = reason
                self.executor.ledger.mark_failed(name, shard_id, reason, traceback.format_exc(),
                                                 attempts=1)
                log.error("%s %s: %s", name, shard_id, reason)
            finally:
                discard(name, shard_id, self.settings)
            if progress:
                progress(name, 1, len(todo))
        pre.join()
        del stage
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
