"""A real enhance worker process answers ping; the package imports no model stack."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

from common.ledger.records import DoneRecord
from tests.conftest import REPO
from tests.harness import stop_process


def test_import_loads_no_model_stack() -> None:
    code = ("import json, sys, services.enhance; "
            "print(json.dumps(sorted(m for m in ('torch', 'transformers', 'onnxruntime', "
            "'ctranslate2', 'faster_whisper', 'neucodec', 'services.asr', 'services.tokenize') "
            "if m in sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True,
                         check=True, timeout=60)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []


def test_worker_answers_ping_and_enhances_a_shard(isolated_redis_url: str, tmp_path) -> None:
    from tests.services.enhance.helpers import build_inputs

    build_inputs(tmp_path / "raw", tmp_path / "out")
    env = {**os.environ, "ONSEI_BROKER_URL": isolated_redis_url, "ONSEI_ENHANCE_BACKEND": "none",
           "ONSEI_OUTPUT_URL": str(tmp_path / "out"), "ONSEI_INPUT_URL": str(tmp_path / "raw"),
           "OMP_NUM_THREADS": "1"}
    name = f"enhance-test-{os.getpid()}@%h"
    proc = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "services.enhance", "worker", "-Q", "enhance",
         "-c", "1", "-n", name, "--without-gossip", "--without-mingle", "-l", "warning"],
        cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        from common.settings import Settings
        from services.stages import make_app

        app = make_app("enhance-test", Settings(broker_url=isolated_redis_url))
        replies: dict = {}
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not replies:
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else "worker exited"
            replies = app.control.inspect(timeout=1.0).ping() or {}
        assert replies, "no worker answered ping"
        assert any(k.startswith("enhance-test-") for k in replies)
        assert all(v == {"ok": "pong"} for v in replies.values())
        # And it does the work: one shard through the queue, done record last.
        from common.queue.config import send_stage_task

        send_stage_task(app, "enhance", 0, until="enhance")
        done = tmp_path / "out/_ledger/enhance/shard-000000.json"
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not done.exists():
            assert proc.poll() is None, "worker exited"
            time.sleep(0.5)
        record = DoneRecord.from_json(done.read_bytes())
        assert record.counts["segments"] == 3 and record.model_info["enhancer"] == "none"
        assert (tmp_path / "out/enhanced/shard-000000.tar").is_file()
    finally:
        stop_process(proc, 30)
