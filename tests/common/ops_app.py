"""A Celery app with a trivial stage for the operations tests (preemption, metrics):
``celery -A tests.common.ops_app worker -Q asr``. The stage's input file holds the seconds to
work; it writes a marker when it starts, then its output."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from common.queue.worker import register_stage_task
from common.stages.contract import Stage, StageResult
from services.stages import PIPELINE, boot_settings, make_app, output_key


class SleepStage(Stage):
    name = "asr"

    def load(self) -> None:
        pass

    def model_info(self) -> dict[str, Any]:
        return {"model": "sleep", "version": "1"}

    def process(self, shard_id: int, inputs: dict[str, Path], workdir: Path) -> StageResult:
        seconds = float(inputs["shard"].read_text())
        marker = os.environ.get("OPS_TEST_STARTED_DIR")
        if marker:
            Path(marker, f"{shard_id}.{os.getpid()}").touch()
        with self.clock.model():  # the "model": the engine writes model_seconds from it
            time.sleep(seconds)
        out = workdir / "out.jsonl"
        out.write_text('{"ok": true}\n')
        return StageResult(outputs={output_key("asr", self.settings, shard_id): out},
                           counts={"files": 1}, audio_seconds_in=10.0, audio_seconds_out=8.0)


app = make_app("tests.common.ops_app", boot_settings())
process_shard = register_stage_task(app, PIPELINE, "asr", SleepStage)
