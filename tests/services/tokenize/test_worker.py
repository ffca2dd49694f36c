"""A real ``celery -A services.tokenize worker -Q tokenize`` process on a real Redis."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from common.queue.config import send_stage_task
from services.stages import PipelineSettings, make_app, output_key
from tests.conftest import REPO
from tests.harness import stop_process
from tests.services.tokenize.conftest import write_enhanced_tar


def test_import_does_not_load_other_stacks() -> None:
    code = ("import sys, services.tokenize\n"
            "bad = [m for m in ('torch', 'ctranslate2', 'faster_whisper', 'neucodec') "
            "if m in sys.modules]\n"
            "assert not bad, bad\n")
    subprocess.run([sys.executable, "-c", code], cwd=REPO, check=True, timeout=60)


def test_worker_answers_ping_and_tokenizes_a_shard(isolated_redis_url: str, tmp_path: Path,
                                                   neucodec_dir: Path) -> None:
    out = tmp_path / "out"
    s = PipelineSettings(broker_url=isolated_redis_url, output_url=str(out),
                 scratch_dir=str(tmp_path / "scratch"), tokenize_neucodec_model=str(neucodec_dir),
                 tokenize_device="cpu")
    write_enhanced_tar(out / output_key("enhance", s, 3),
                       [("000000000001_0000", 0.5, "one"), ("000000000001_0001", 0.7, "two")])
    env = {**os.environ, "ONSEI_BROKER_URL": isolated_redis_url, "ONSEI_OUTPUT_URL": str(out),
           "ONSEI_SCRATCH_DIR": str(tmp_path / "scratch"),
           "ONSEI_TOKENIZE_NEUCODEC_MODEL": str(neucodec_dir),
           "ONSEI_TOKENIZE_DEVICE": "cpu", "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
    env.pop("ONSEI_CONFIG", None)
    log = open(tmp_path / "worker.log", "w")  # noqa: SIM115
    proc = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "services.tokenize", "worker", "-Q", "tokenize",
         "-c", "1", "--pool", "prefork", "-n", f"tok-{os.getpid()}@%h", "--loglevel", "INFO"],
        cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT)
    app = make_app("test-tokenize", s)
    try:
        replies = None
        end = time.monotonic() + 90
        while time.monotonic() < end and not replies:
            replies = app.control.inspect(timeout=2).ping()
        assert replies and any(v == {"ok": "pong"} for v in replies.values()), replies
        send_stage_task(app, "tokenize", 3, "tokenize")
        done = out / "_ledger" / "tokenize" / "neucodec" / "shard-000003.json"
        end = time.monotonic() + 240
        while time.monotonic() < end and not done.is_file():
            assert proc.poll() is None, (tmp_path / "worker.log").read_text()[-3000:]
            time.sleep(1)
        assert done.is_file(), (tmp_path / "worker.log").read_text()[-3000:]
        lines = (out / "tokens" / "neucodec" / "shard-000003.jsonl").read_text().splitlines()
        assert len(lines) == 2
    finally:
        stop_process(proc, 30)
        log.close()
