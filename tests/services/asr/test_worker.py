"""The ASR stage driven for real: a Celery worker (prefork, one child) on Redis answering
``inspect ping`` and processing a shard, and ``onsei run --stages asr``."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fixtures.speech_corpus import EN_SENTENCES
from fixtures.speechgen import concat, make_shard, synth, wav_bytes
from tests.harness import stop_process
from tests.services.asr.conftest import MODEL, _model_cache
from tests.system_packages import ESPEAK, needs

REPO = Path(__file__).resolve().parents[3]
pytestmark = [pytest.mark.timeout(600),
              needs(ESPEAK)]


def _env(tmp: Path, broker: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update({
        "ONSEI_BROKER_URL": broker, "ONSEI_INPUT_URL": str(tmp / "raw"),
        "ONSEI_OUTPUT_URL": str(tmp / "out"), "ONSEI_SCRATCH_DIR": str(tmp / "scratch"),
        "ONSEI_MODEL_CACHE": _model_cache(), "ONSEI_ASR_MODEL": MODEL,
        "ONSEI_ASR_DEVICE": "cpu", "ONSEI_ASR_COMPUTE_TYPE": "int8", "ONSEI_UNTIL": "asr",
        "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(REPO),
    })
    env.pop("ONSEI_CONFIG", None)
    return env


def _small_shard(path: Path) -> Path:
    speech = concat([synth(s) for s in EN_SENTENCES[3:5]], pause=0.6)
    return make_shard(path, {"a": {"wav": wav_bytes(speech)}, "b": {"mp3": b"not audio"}})


def _read_lines(out: Path, shard: int) -> list[dict]:
    text = (out / "asr" / f"shard-{shard:06d}.jsonl").read_text(encoding="utf-8")
    return [json.loads(x) for x in text.splitlines()]


def test_worker_answers_ping_and_processes_a_shard(tmp_path: Path,
                                                   isolated_redis_url: str) -> None:
    from common.ledger.store import Ledger
    from common.queue.config import send_stage_task
    from common.settings import Settings
    from common.storage import open_store
    from services.stages import PIPELINE, make_app

    env = _env(tmp_path, isolated_redis_url)
    _small_shard(tmp_path / "raw" / "shard-000003.tar")
    node = f"asr-test-{os.getpid()}@{socket.gethostname()}"
    log = open(tmp_path / "worker.log", "wb")  # noqa: SIM115 - outlives this block
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "services.asr", "worker", "-Q", "asr",
         "--pool", "prefork", "-c", "1", "-n", node, "--without-gossip", "--without-mingle",
         "-l", "info"], cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT,
        start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        pong = ""
        while time.monotonic() < deadline:
            r = subprocess.run([sys.executable, "-m", "celery", "-A", "services.asr", "inspect",
                                "ping", "-d", node, "-t", "3"], check=False, cwd=REPO, env=env,
                               capture_output=True, text=True, timeout=60)
            pong = r.stdout + r.stderr
            if r.returncode == 0 and "pong" in pong:
                break
            assert worker.poll() is None, (tmp_path / "worker.log").read_text()
            time.sleep(1)
        assert "pong" in pong, pong

        settings = Settings(broker_url=isolated_redis_url, output_url=str(tmp_path / "out"))
        app = make_app("asr-test-client", settings)
        send_stage_task(app, "asr", 3, until="asr")
        ledger = Ledger(open_store(str(tmp_path / "out")), settings, PIPELINE)
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and not ledger.is_done("asr", 3):
            assert worker.poll() is None, (tmp_path / "worker.log").read_text()
            time.sleep(0.5)
        record = ledger.read_done("asr", 3)
        assert record is not None, (tmp_path / "worker.log").read_text()[-3000:]
        assert record.counts["files"] == 2 and record.counts["errors"] == 1
        assert record.model == MODEL
        lines = _read_lines(tmp_path / "out", 3)
        assert [x["key"] for x in lines] == ["a", "b"]
        assert lines[0]["status"] == "ok" and lines[0]["language"] == "en"
        assert lines[1]["status"] == "error:undecodable"
    finally:
        stop_process(worker, group=True)
        log.close()


def test_onsei_run_asr_stage(tmp_path: Path, redis_url: str) -> None:
    env = _env(tmp_path, redis_url)
    _small_shard(tmp_path / "raw" / "shard-000004.tar")
    r = subprocess.run([sys.executable, "-m", "services.ops.cli", "run", "--range", "4",
                        "--stages", "asr"], check=False, cwd=REPO, env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    lines = _read_lines(tmp_path / "out", 4)
    assert [x["status"] for x in lines] == ["ok", "error:undecodable"]
    assert (tmp_path / "out" / "_ledger" / "asr" / "shard-000004.json").is_file()
    # Done shards are skipped on a second run.
    r2 = subprocess.run([sys.executable, "-m", "services.ops.cli", "run", "--range", "4",
                         "--stages", "asr"], check=False, cwd=REPO, env=env,
                        capture_output=True, text=True, timeout=300)
    assert r2.returncode == 0 and "already done 1" in r2.stdout, r2.stdout + r2.stderr
