"""Graceful preemption with real Celery worker processes on real Redis: SIGTERM either lets the
shard in hand finish (within ONSEI_SHUTDOWN_TIMEOUT) or hands it back to the queue at once, and a
second worker completes it. Nothing is lost."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest
import redis

from common.queue.config import send_stage_task
from common.queue.tracking import attempts_key, running_key
from common.settings import Settings
from services.stages import make_app
from tests.common.ops_worker import start_worker, stop, wait_for

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def setup(tmp_path: Path, private_redis_url: str):
    raw, out, started = tmp_path / "raw", tmp_path / "out", tmp_path / "started"
    for d in (raw, out, started):
        d.mkdir()
    env = {"ONSEI_INPUT_URL": str(raw), "ONSEI_OUTPUT_URL": str(out),
           "ONSEI_SCRATCH_DIR": str(tmp_path / "scratch"), "ONSEI_BROKER_URL": private_redis_url,
           "ONSEI_METRICS_PORT": "0", "OPS_TEST_STARTED_DIR": str(started)}
    app = make_app("test-sender", Settings(broker_url=private_redis_url))
    return {"raw": raw, "out": out, "started": started, "env": env, "app": app,
            "r": redis.Redis.from_url(private_redis_url), "log": tmp_path / "worker.log"}


def _done(out: Path, shard_id: int) -> Path:
    return out / "_ledger" / "asr" / f"shard-{shard_id:06d}.json"


def test_sigterm_hands_a_long_shard_back_and_another_worker_completes_it(setup) -> None:
    s = setup
    (s["raw"] / "shard-000001.tar").write_text("60")  # far longer than the timeout
    send_stage_task(s["app"], "asr", 1, "asr")
    w1 = start_worker({**s["env"], "ONSEI_SHUTDOWN_TIMEOUT": "2"}, "w1", s["log"])
    try:
        wait_for(lambda: any(s["started"].iterdir()), 60, "shard start", w1, s["log"])
        assert s["r"].llen("asr") == 0 and s["r"].hlen("unacked") == 1  # in hand, unacked
        t0 = time.monotonic()
        os.kill(w1.pid, signal.SIGTERM)  # docker stop: SIGTERM to the main process only
        w1.wait(40)
        elapsed = time.monotonic() - t0
    finally:
        stop(w1)
    assert elapsed < 30, elapsed  # handed back after ~2 s, not after the 60 s shard
    # the message is back in its queue, not in flight, not dead-lettered, not done
    assert s["r"].llen("asr") == 1 and s["r"].hlen("unacked") == 0
    body = json.loads(s["r"].lindex("asr", 0))
    assert body["headers"]["task"] == "onsei.asr.process_shard"
    assert not s["r"].exists(attempts_key("asr", 1))  # a hand-back is not a failure
    assert not s["r"].hexists(running_key("asr"), "1")
    assert not _done(s["out"], 1).exists()
    assert "handing back" in s["log"].read_text()

    (s["raw"] / "shard-000001.tar").write_text("0.1")
    # another machine: its own scratch (w1's prefetched copy of the old input is not there)
    w2 = start_worker({**s["env"], "ONSEI_SCRATCH_DIR": str(s["raw"].parent / "scratch2")},
                      "w2", s["log"])
    try:
        wait_for(lambda: _done(s["out"], 1).exists(), 60, "second worker", w2, s["log"])
    finally:
        stop(w2)
    assert (s["out"] / "asr" / "shard-000001.jsonl").exists()
    assert s["r"].llen("asr") == 0


def test_sigterm_to_every_process_lets_a_short_shard_finish(setup) -> None:
    s = setup
    (s["raw"] / "shard-000002.tar").write_text("3")
    send_stage_task(s["app"], "asr", 2, "asr")
    send_stage_task(s["app"], "asr", 3, "asr")  # waiting: must NOT be taken after SIGTERM
    (s["raw"] / "shard-000003.tar").write_text("0.1")
    w = start_worker({**s["env"], "ONSEI_SHUTDOWN_TIMEOUT": "60"}, "w", s["log"])
    try:
        wait_for(lambda: any(s["started"].iterdir()), 60, "shard start", w, s["log"])
        os.killpg(w.pid, signal.SIGTERM)  # systemd at VM shutdown: the pool process too
        w.wait(60)
    finally:
        stop(w)
    assert _done(s["out"], 2).exists()  # the pool process survived SIGTERM and finished
    assert not _done(s["out"], 3).exists()
    assert s["r"].llen("asr") == 1 and s["r"].hlen("unacked") == 0  # shard 3 still queued
