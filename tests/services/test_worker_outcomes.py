"""A real stage worker, started the plain way (``celery -A services.enhance worker``, no ``-n``,
no ``--loglevel``): it is named after its stage, logs a line per shard, and a shard whose
outcome cannot be written stays queued (loudly) until it can be."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from common.queue.config import send_stage_task
from common.settings import Settings
from services.stages import make_app
from tests.conftest import REPO
from tests.harness import stop_process, wait_until


def _worker(tmp_path: Path, redis_url: str) -> tuple[subprocess.Popen, Path]:
    from tests.services.enhance.helpers import build_inputs

    build_inputs(tmp_path / "raw", tmp_path / "out")
    env = {**os.environ, "ONSEI_BROKER_URL": redis_url, "ONSEI_ENHANCE_BACKEND": "none",
           "ONSEI_OUTPUT_URL": str(tmp_path / "out"), "ONSEI_INPUT_URL": str(tmp_path / "raw"),
           "ONSEI_SCRATCH_DIR": str(tmp_path / "scratch"), "ONSEI_RETRY_BACKOFF_SECONDS": "0.02",
           "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}
    log = tmp_path / "worker.log"
    with open(log, "wb") as f:
        proc = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "services.enhance", "worker", "-c", "1",
             "--without-gossip", "--without-mingle"],
            cwd=REPO, env=env, stdout=f, stderr=subprocess.STDOUT)
    return proc, log


def test_named_after_its_stage_and_logs_each_shard(private_redis_url: str, tmp_path) -> None:
    proc, log = _worker(tmp_path, private_redis_url)
    try:
        app = make_app("probe", Settings(broker_url=private_redis_url))
        replies: dict = {}
        end = time.monotonic() + 60
        while time.monotonic() < end and not replies and proc.poll() is None:
            replies = app.control.inspect(timeout=1.0).ping() or {}
        assert [k.split("@")[0] for k in replies] == ["enhance"], log.read_text()
        send_stage_task(app, "enhance", 0, until="enhance")
        done = tmp_path / "out/_ledger/enhance/shard-000000.json"
        assert wait_until(done.exists, 120), log.read_text()
        assert wait_until(lambda: "enhance 0: done" in log.read_text(), 10), log.read_text()
        text = log.read_text()
        assert "enhance 0: received (attempt 1)" in text
        assert "audio hours" in text and "x real time" in text
    finally:
        stop_process(proc, 30)


def test_unrecordable_outcome_keeps_the_message(private_redis_url: str, tmp_path) -> None:
    proc, log = _worker(tmp_path, private_redis_url)
    blocker = tmp_path / "out/_ledger"
    blocker.write_text("nothing can be written under the ledger")  # root-proof read-only
    try:
        app = make_app("probe", Settings(broker_url=private_redis_url))
        send_stage_task(app, "enhance", 0, until="enhance")
        # tried, could not be recorded, handed back and tried again: never acknowledged
        assert wait_until(lambda: log.read_text().count("outcome not recorded") >= 2, 120,
                          workers=()), log.read_text()
        assert proc.poll() is None
        blocker.unlink()  # the output root is writable again: the same message finishes
        done = tmp_path / "out/_ledger/enhance/shard-000000.json"
        assert wait_until(done.exists, 60), log.read_text()
        assert "CRITICAL" in log.read_text()  # said loudly, not just retried
    finally:
        stop_process(proc, 30)
