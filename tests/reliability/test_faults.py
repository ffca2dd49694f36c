"""Fault campaign: real Redis (a private redis-server), the moto S3 server (behind a
fault-injecting proxy where the fault is S3), real Celery worker processes; each test ends with
the same audit: every shard of the range done exactly once (one version of its done record in a
versioned bucket), every output holds each segment exactly once, the ledger agrees with the
outputs, nothing dead-lettered.

Default run: the dummy pipeline (tests/dummy: the real Stage contract, executor, task body,
queues and storage; no model), about 2-3 minutes. ``-m slow`` adds the same faults on the real
stages (asr with bundled:whisper-base, enhance with ONSEI_ENHANCE_BACKEND=none) and longer kill
series:

    pytest tests/reliability/test_faults.py -m "slow or not slow"

The outages of a node's disk and of Redis are in test_faults_outages.py (a file apiece lets the
two campaigns run side by side).
"""

from __future__ import annotations

import random
import time

import pytest

from tests.faultproxy import FaultProxy
from tests.harness import wait_until
from tests.reliability.fault_runs import DUMMY, REAL, finish, make_rig, timeouts
from tests.reliability.rig import REDELIVER_SECONDS


# --- kill -9 -------------------------------------------------------------------------------------
@pytest.mark.parametrize("pipeline,kills", [
    pytest.param("dummy", 3, id="dummy"),
    pytest.param("dummy", 12, marks=pytest.mark.slow, id="dummy-long"),
    pytest.param("real", 4, marks=pytest.mark.slow, id="real")])
def test_kill9_random_workers_repeatedly(pipeline, kills, rigs, tmp_path, s3_endpoint):
    rig = make_rig(rigs, tmp_path, s3_endpoint, pipeline, shards=12,
                ONSEI_DUMMY_SECONDS="0.6", ONSEI_VISIBILITY_TIMEOUT=REDELIVER_SECONDS[pipeline])
    rig.start_workers(3)
    rig.enqueue()
    rng = random.Random(8)
    led = rig._ledger()
    done_at_kill = []
    for _ in range(kills):
        time.sleep(rng.uniform(2.0, 4.0) if pipeline == "dummy" else rng.uniform(8, 15))
        victim = rng.choice(rig.workers)
        rig.kill9(victim)
        done_at_kill.append(len(led.done_ids(rig.chain[-1], rig.ids)))
        rig.start_workers(1)
    assert done_at_kill[0] < len(rig.ids), "the run ended before the first kill"
    finish(rig, timeouts(pipeline))


# --- Redis lost -----------------------------------------------------------------------------------
@pytest.mark.parametrize("pipeline", [DUMMY, REAL])
def test_redis_restarted_and_wiped_then_enqueue_again(pipeline, rigs, tmp_path, s3_endpoint):
    rig = make_rig(rigs, tmp_path, s3_endpoint, pipeline, shards=6, ONSEI_DUMMY_SECONDS="0.5")
    rig.start_workers(2)
    rig.enqueue()
    led = rig._ledger()
    assert wait_until(lambda: len(led.done_ids("asr", rig.ids)) >= 2, timeouts(pipeline)), \
        rig.logs()[-4000:]
    assert len(led.done_ids(rig.chain[-1], rig.ids)) < len(rig.ids)
    before = rig.redis.client().info("server")["run_id"]
    rig.redis.restart_wiped()  # queues, unacked messages, counters, tracking sets: all gone
    # A new server process without persistence: it started empty. (Its dbsize cannot be checked
    # here: the workers reconnect within milliseconds and write heartbeats and bindings.)
    assert rig.redis.client().info("server")["run_id"] != before
    time.sleep(2)
    out = rig.enqueue()  # the ledger says what is missing
    assert "enqueued" in out
    # A shard in hand during the wipe cannot be known as running any more: re-enqueueing it
    # may redo it once (idempotent outputs, same result). Lost and duplicated stay 0.
    finish(rig, timeouts(pipeline), allow_redone=True)


# --- S3 failing -----------------------------------------------------------------------------------
# Every 4th request through the proxy gets the next of these in turn: 500s, connection resets,
# and reads slower than the client's read timeout (GET only: a timed-out write could land twice).
# Counted in requests, not seconds, so the faults a run meets do not depend on the machine's speed.
CHAOS = [{"mode": "status", "status": 500}, {"mode": "reset"},
         {"mode": "delay", "delay": 2.5, "methods": {"GET"}}, {"mode": "status", "status": 503}]
CHAOS_EVERY = 4


@pytest.mark.parametrize("pipeline", [DUMMY, REAL])
def test_s3_failing_requests(pipeline, rigs, tmp_path, s3_endpoint):
    with FaultProxy(s3_endpoint) as proxy:
        rig = make_rig(rigs, tmp_path, s3_endpoint, pipeline, shards=6, member_bytes=200_000,
                    s3_for_workers=proxy.url, ONSEI_S3_READ_TIMEOUT="1",
                    ONSEI_S3_CONNECT_TIMEOUT="1", ONSEI_MAX_TASK_FAILURES="6")
        rig.start_workers(2)
        proxy.set_cycle(CHAOS, every=CHAOS_EVERY)
        rig.enqueue()
        missing = rig.wait_all(timeouts(pipeline))
        proxy.clear()
        # A shard needs several requests per stage (input, output, done record), so a whole
        # run makes >= 40 requests however fast it goes: >= 10 faults, every kind met.
        assert sum(proxy.injected.values()) >= 10, proxy.injected
        assert set(proxy.injected) == {"status", "reset", "delay"}, proxy.injected
        assert not missing, rig.not_done(missing)
        rig.audit().assert_exactly_once()


# --- a hung worker --------------------------------------------------------------------------------
@pytest.mark.parametrize("pipeline", [DUMMY, REAL])
def test_hung_shard_freed_by_hard_time_limit(pipeline, rigs, tmp_path, s3_endpoint):
    limit = "5" if pipeline == "dummy" else "90"  # a dummy shard takes ~0.5 s: 5 s is ample
    rig = make_rig(rigs, tmp_path, s3_endpoint, pipeline, shards=3, ONSEI_TASK_TIME_LIMIT=limit,
                ONSEI_FAULT_HANG="asr:1,enhance:2")
    rig.start_workers(1)
    rig.enqueue()
    finish(rig, timeouts(pipeline) + 2 * int(limit))
    assert (rig.root / "hung-asr-1").exists() and (rig.root / "hung-enhance-2").exists()
    logs = rig.logs(tail=10**7)
    assert logs.count("Hard time limit") >= 2, logs[-5000:]  # freed by the hard limit
