"""The Celery app of the scale bench: three model-free stages of fixed, small cost.

    celery -A bench.scale_app worker -Q asr      (and enhance, tokenize)

Each stage is a real :class:`common.stages.contract.Stage` driven by the real task body
(:func:`common.queue.worker.register_stage_task`: done check, executor, ledger, hand-on), reading
and writing tiny objects in the configured store. ``process`` sleeps ``ONSEI_SCALE_STAGE_MS``
(a fixed cost that takes no CPU), so what the bench measures beyond it is orchestration.

Per task, the worker adds to ``onsei:scale:<stage>`` in Redis (one pipelined round trip after
the task's clock stops): the task's seconds (prerun -> postrun), the stage's own seconds, the
number of ``process`` calls (the audit's "nothing twice") and the first start / last end.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from celery.signals import task_postrun, task_prerun

from common.queue.config import app_settings, task_name
from common.queue.worker import register_stage_task
from common.stages.contract import InputRef, Stage, StageResult
from common.stages.spec import Pipeline, StageSpec
from services.stages import PIPELINE, boot_settings, make_app

STATS = "onsei:scale:{stage}"


def stage_seconds() -> float:
    return float(os.environ.get("ONSEI_SCALE_STAGE_MS", "2")) / 1000


def _spec(name: str) -> StageSpec:
    """The real stage's output key and ledger directory; one input: the previous output."""
    real, prev = PIPELINE.spec(name), PIPELINE.previous(name)
    return StageSpec(name, f"bench.scale_app:Fixed{name.capitalize()}", real.output_key,
                     (lambda s, i: {"src": InputRef("input", s.shard_name(i))}) if prev is None
                     else (lambda s, i, p=prev: {"src": InputRef.of_stage(p)}), real.ledger_dir,
                     settings=real.settings)


SCALE_PIPELINE = Pipeline(_spec(n) for n in PIPELINE.names)


class _Fixed(Stage):
    """Reads the previous stage's output (or the raw shard), sleeps, writes one line more."""

    def load(self) -> None:
        pass

    def model_info(self) -> dict[str, Any]:
        return {"model": f"fixed-{self.name}", "version": "0"}

    def process(self, shard_id: int, inputs: dict[str, Path], workdir: Path) -> StageResult:
        t0 = time.perf_counter()
        with self.clock.model():
            time.sleep(stage_seconds())
        body = inputs["src"].read_bytes() + f"{self.name} {shard_id}\n".encode()
        key = SCALE_PIPELINE.output_key(self.name, self.settings, shard_id)
        out = workdir / Path(key).name
        out.write_bytes(body)
        spent = time.perf_counter() - t0
        _tally(self.name, spent)
        return StageResult({key: out}, {"lines": body.count(b"\n")}, 1.0, 1.0)


class FixedAsr(_Fixed):
    name = "asr"


class FixedEnhance(_Fixed):
    name = "enhance"


class FixedTokenize(_Fixed):
    name = "tokenize"


app = make_app("bench.scale_app", boot_settings())
tasks = {cls.name: register_stage_task(app, SCALE_PIPELINE, cls.name, cls)
         for cls in (FixedAsr, FixedEnhance, FixedTokenize)}
_STAGE_OF = {task_name(s): s for s in SCALE_PIPELINE.names}

# --- per-task timing (one pipelined Redis round trip per task, outside the measured span) ----
_state: dict[str, Any] = {"client": None, "pid": -1, "t0": {}, "stage_s": 0.0}


def _client() -> Any:
    if _state["pid"] != os.getpid():  # a forked pool process opens its own connection
        from common.queue.tracking import redis_client

        _state["client"], _state["pid"] = redis_client(app_settings(app)), os.getpid()
    return _state["client"]


def _tally(stage: str, seconds: float) -> None:
    _state["stage_s"] += seconds
    _state.setdefault("calls", {}).setdefault(stage, 0)
    _state["calls"][stage] += 1


@task_prerun.connect(weak=False)
def _start(task_id: str = "", task: Any = None, **_: Any) -> None:
    _state["t0"][task_id] = time.perf_counter()
    _state["wall0"] = time.time()
    _state["stage_s"] = 0.0
    _state["calls"] = {}


@task_postrun.connect(weak=False)
def _end(task_id: str = "", task: Any = None, **_: Any) -> None:
    t0 = _state["t0"].pop(task_id, None)
    stage = _STAGE_OF.get(getattr(task, "name", ""))
    if t0 is None or stage is None:
        return
    spent = time.perf_counter() - t0
    key = STATS.format(stage=stage)
    p = _client().pipeline(transaction=False)
    p.hincrbyfloat(key, "task_seconds", spent)
    p.hincrbyfloat(key, "stage_seconds", _state["stage_s"])
    p.hincrby(key, "tasks", 1)
    p.hincrby(key, "process_calls", _state["calls"].get(stage, 0))
    p.zadd(key + ":first", {"t": _state["wall0"]}, lt=True)  # earliest task start
    p.zadd(key + ":last", {"t": time.time()}, gt=True)  # latest task end
    p.execute()
