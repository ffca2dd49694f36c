"""End-to-end queue behaviour with real workers, real Redis and a real S3 server.

The stages are the dummy pipeline (tests/dummy: the real Stage contract, no model) so that the
faults are what is tested here: a pickled message, kill -9 mid-shard, Redis flushed mid-run, a
shard that always fails. tests/services/test_e2e_pipeline.py runs the real models.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import boto3
import pytest
import redis

from common.queue.tracking import Tracker
from fixtures.speechgen import make_shard
from tests.harness import (
    WaitAborted,
    enqueue,
    ledger_for,
    pipeline_env,
    settings_from,
    start_worker,
    wait_done,
    wait_failed,
    wait_until,
    worker_logs,
)

KEYS = 3  # members per shard; the dummy asr makes 2 segments each


@pytest.fixture
def env(tmp_path: Path, s3_bucket: str, private_redis_url: str) -> dict[str, str]:
    s3 = boto3.client("s3")
    for i in range(4):
        p = make_shard(tmp_path / f"shard-{i:06d}.tar",
                       {f"k{j}": {"wav": os.urandom(64)} for j in range(KEYS)})
        s3.upload_file(str(p), s3_bucket, f"raw/{p.name}")
    return pipeline_env(private_redis_url, f"s3://{s3_bucket}/raw", f"s3://{s3_bucket}/out",
                        tmp_path / "scratch", ONSEI_VISIBILITY_TIMEOUT="8")


def _segments(env: dict[str, str], shard_id: int) -> list[str]:
    led = ledger_for(env)
    s = settings_from(env)
    key = f"tokens/{s.tokenize_codec}/{s.shard_stem(shard_id)}.jsonl"
    lines = led.store.read_bytes(key).decode().splitlines()
    return [json.loads(x)["id"] for x in lines]


def _assert_exactly_once(env: dict[str, str], ids: range) -> None:
    want = sorted(f"k{j}_{i:04d}" for j in range(KEYS) for i in range(2))
    for i in ids:
        assert sorted(_segments(env, i)) == want, i


def _worker(env: dict[str, str], request: pytest.FixtureRequest, **extra: str):
    w = start_worker("tests.dummy", "asr,enhance,tokenize", {**env, **extra})
    request.addfinalizer(w.kill9)  # fast teardown; the Redis DB is the test's own
    return w


def test_enqueue_runs_all_then_nothing_twice(env, request) -> None:
    w = _worker(env, request)
    out = enqueue(["--range", "0-3"], env).stdout
    assert "enqueued 4 (asr=4)" in out
    assert not wait_done(env, "tokenize", range(4), 90, [w]), worker_logs([w])
    _assert_exactly_once(env, range(4))
    rec = ledger_for(env).read_done("tokenize", 2)
    assert rec.counts["segments"] == 2 * KEYS and rec.host
    assert "enqueued 0" in enqueue(["--range", "0-3"], env).stdout
    assert Tracker(settings_from(env)).queued_ids("asr") == set()
    assert "inputs prefetched" in w.log_text()  # the main process downloaded ahead
    left = [p for p in (Path(env["ONSEI_SCRATCH_DIR"]) / "prefetch").glob("*/shard-*")
            if p.is_dir()]
    assert not left  # each prefetched download was used and removed


def test_pickled_message_is_refused(env, request, tmp_path: Path) -> None:
    from celery import Celery

    marker = tmp_path / "pwned"

    class Evil:
        def __reduce__(self):  # unpickling would run os.mkdir(marker)
            return (os.mkdir, (str(marker),))

    w = _worker(env, request)
    app = Celery("evil", broker=env["ONSEI_BROKER_URL"])
    m = app.amqp.as_task_v2("evil-1", "onsei.asr.process_shard", args=[0, Evil()], kwargs={})
    with app.connection_for_write() as conn:
        conn.Producer().publish(m.body, routing_key="asr", exchange="", serializer="pickle",
                                headers=m.headers, **m.properties)
    enqueue(["--range", "1", "--until", "asr"], env)  # a JSON message behind it
    assert not wait_done(env, "asr", [1], 60, [w]), worker_logs([w])
    assert not marker.exists()
    assert not ledger_for(env).is_done("asr", 0)
    assert wait_until(lambda: "ContentDisallowed" in w.log_text()
                      or "untrusted content" in w.log_text(), 10), worker_logs([w])


def test_kill9_mid_shard_then_new_worker_completes(env, request) -> None:
    slow = {"ONSEI_DUMMY_SECONDS": "1.5"}
    w1 = _worker(env, request, **slow)
    enqueue(["--range", "0-2", "--until", "asr"], env)
    tracker = Tracker(settings_from(env))
    assert wait_until(lambda: bool(tracker.running("asr")), 60), worker_logs([w1])
    in_hand = set(tracker.running("asr"))
    w1.kill9()
    assert not ledger_for(env).done_ids("asr") & in_hand  # it really died mid-shard
    w2 = _worker(env, request, **slow)
    assert not wait_done(env, "asr", range(3), 120, [w1, w2]), worker_logs([w1, w2])
    led, s = ledger_for(env), settings_from(env)
    for i in range(3):  # the redone shard's output holds each segment exactly once
        lines = led.store.read_bytes(f"asr/{s.shard_stem(i)}.jsonl").decode().splitlines()
        keys = [json.loads(x)["key"] for x in lines]
        assert sorted(keys) == [f"k{j}" for j in range(KEYS)], (i, keys)
    assert tracker.running("asr") == {}
    assert max(led.read_done("asr", i).finished_at for i in in_hand) > 0


def test_redis_flushed_mid_run_then_enqueue_again(env, request) -> None:
    w = _worker(env, request, ONSEI_DUMMY_SECONDS="0.5")
    enqueue(["--range", "0-3"], env)
    led = ledger_for(env)
    assert wait_until(lambda: len(led.done_ids("asr")) >= 1, 60), worker_logs([w])
    redis.Redis.from_url(env["ONSEI_BROKER_URL"]).flushdb()  # queues, sets, unacked: gone
    out = enqueue(["--range", "0-3"], env).stdout
    assert "enqueued 0 " not in out, out
    assert not wait_done(env, "tokenize", range(4), 120, [w]), worker_logs([w])
    _assert_exactly_once(env, range(4))


def test_always_failing_shard_is_dead_lettered(env, request, tmp_path: Path) -> None:
    bad = tmp_path / "bad.tar"
    bad.write_bytes(b"this is not a tar file" * 100)
    s = settings_from(env)
    boto3.client("s3").upload_file(str(bad), s.input_url.split("/")[2],
                                   f"raw/{s.shard_name(1)}")
    w = _worker(env, request)
    enqueue(["--range", "0-3"], env)
    rec = wait_failed(env, "asr", 1, 90, workers=[w])
    assert rec is not None, worker_logs([w])
    assert rec.attempts == 3 and "ShardError" in rec.reason
    assert "Traceback" in rec.traceback
    assert not wait_done(env, "tokenize", [0, 2, 3], 90, [w]), worker_logs([w])
    assert not ledger_for(env).is_done("asr", 1)
    out = enqueue(["--range", "0-3"], env).stdout
    assert "enqueued 0" in out and "dead-lettered 1" in out
    # A wait that includes the dead shard ends at once with the reason, not after its timeout.
    t0 = time.monotonic()
    with pytest.raises(WaitAborted, match="asr shard 1 dead-lettered after 3 tries: ShardError"):
        wait_done(env, "tokenize", range(4), 300, [w])
    assert time.monotonic() - t0 < 10


def test_wait_stops_when_a_worker_exits(env) -> None:
    w = start_worker("tests.no_such_app", "asr", env)  # exits at once: the app cannot load
    t0 = time.monotonic()
    with pytest.raises(WaitAborted, match=r"exited with code [1-9]"):
        wait_done(env, "asr", range(1), 300, [w])
    assert time.monotonic() - t0 < 60
