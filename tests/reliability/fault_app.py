"""A Celery app for the fault campaign: the stages of one pipeline, with fault hooks.

    celery -A tests.reliability.fault_app worker -Q asr,enhance,tokenize

``ONSEI_FAULT_PIPELINE``: ``dummy`` (tests/dummy: the real Stage contract, no model, exact and
fast) or ``real`` (services.asr with ``bundled:whisper-base`` and services.enhance, typically with
``ONSEI_ENHANCE_BACKEND=none``; tokenize is left out of fault runs: a NeuCodec per worker process is
~1.5 GB). ``ONSEI_FAULT_HANG=asr:3,enhance:5`` makes the first attempt of those shards hang in a
way that the soft time limit cannot interrupt (SIGUSR1 blocked, like a stuck GPU call): only the
hard time limit frees them. ``ONSEI_FAULT_PAUSE_AFTER_DONE=asr:0`` makes the first attempt of
those shards stop right after their done record is written, before the hand-on: it writes
``paused-asr-0`` and waits for ``resume-asr-0`` (a test takes the broker away meanwhile).
``ONSEI_FAULT_DIR`` holds these markers.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from common.queue.worker import register_stage_task
from common.stages.contract import Stage
from common.stages.engine import SHARD_OBSERVERS
from services.stages import PIPELINE, boot_settings, make_app


def _hang_once(stage: str, shard_id: int) -> None:
    wanted = {x.strip() for x in os.environ.get("ONSEI_FAULT_HANG", "").split(",") if x.strip()}
    if f"{stage}:{shard_id}" not in wanted:
        return
    marker = Path(os.environ.get("ONSEI_FAULT_DIR", "/tmp")) / f"hung-{stage}-{shard_id}"
    try:
        fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)  # first attempt only
    except FileExistsError:
        return
    os.close(fd)
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})  # no soft time limit either
    while True:
        time.sleep(3600)


def _pause_after_done(stage: str, shard_id: int, record: dict | None,
                      error: BaseException | None) -> None:
    wanted = {x.strip() for x in os.environ.get("ONSEI_FAULT_PAUSE_AFTER_DONE", "").split(",")}
    if record is None or f"{stage}:{shard_id}" not in wanted:
        return
    d = Path(os.environ.get("ONSEI_FAULT_DIR", "/tmp"))
    try:
        os.close(os.open(d / f"paused-{stage}-{shard_id}", os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return  # first attempt only
    deadline = time.monotonic() + 300
    while not (d / f"resume-{stage}-{shard_id}").exists() and time.monotonic() < deadline:
        time.sleep(0.05)


SHARD_OBSERVERS.append(_pause_after_done)


def with_faults(cls: type[Stage]) -> type[Stage]:
    class Faulty(cls):  # type: ignore[misc, valid-type]  # a class made per stage
        def process(self, shard_id, inputs, workdir):
            _hang_once(self.name, shard_id)
            return super().process(shard_id, inputs, workdir)

    Faulty.__name__ = f"Faulty{cls.__name__}"
    return Faulty


def stage_classes(pipeline: str) -> list[type[Stage]]:
    if pipeline == "real":
        from services.asr.stage import AsrStage
        from services.enhance.stage import EnhanceStage

        return [AsrStage, EnhanceStage]
    # Load tests/dummy/stages.py without its package: tests/dummy/__init__.py builds its own
    # app and registers the same task names (shared tasks: the first registration would win).
    import importlib.util

    path = Path(__file__).resolve().parents[1] / "dummy" / "stages.py"
    spec = importlib.util.spec_from_file_location("onsei_fault_dummy_stages", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return [mod.DummyAsr, mod.DummyEnhance, mod.DummyTokenize]


KIND = os.environ.get("ONSEI_FAULT_PIPELINE", "dummy")
app = make_app("tests.reliability.fault_app", boot_settings())
tasks = {cls.name: register_stage_task(app, PIPELINE, cls.name, with_faults(cls))
         for cls in stage_classes(KIND)}
