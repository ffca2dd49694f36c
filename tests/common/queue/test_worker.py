"""The shared task body, run eagerly: retry then success, dead-letter after N, done-skip."""

from __future__ import annotations

from pathlib import Path

import pytest

from common.ledger.store import Ledger
from common.queue.tracking import Tracker
from common.queue.worker import DeadLettered, register_stage_task
from common.storage import open_store
from fixtures.speechgen import make_shard
from services.stages import PIPELINE, make_app
from tests.dummy.stages import DummyAsr

CALLS: list[int] = []


class _Flaky(DummyAsr):
    """Fails with a transient error the first time it sees a shard."""

    def process(self, shard_id: int, inputs: dict, workdir: Path):
        CALLS.append(shard_id)
        if CALLS.count(shard_id) == 1:
            raise ConnectionError("S3 reset by peer")
        return super().process(shard_id, inputs, workdir)


class _Broken(DummyAsr):
    def process(self, shard_id: int, inputs: dict, workdir: Path):
        CALLS.append(shard_id)
        raise ValueError("corrupt shard")


@pytest.fixture
def setup(make_settings, private_redis_url):
    CALLS.clear()
    s = make_settings(broker_url=private_redis_url, max_task_failures=3,
                      retry_backoff_seconds=0.01)
    make_shard(Path(s.input_url) / s.shard_name(0), {"a": {"wav": b"x"}})
    return s, Ledger(open_store(s.output_url, s), s, PIPELINE)


def _task(s, cls):
    app = make_app("t", s)
    app.conf.task_always_eager = True
    return register_stage_task(app, PIPELINE, "asr", cls)


def test_transient_failure_is_retried_then_done(setup) -> None:
    s, led = setup
    res = _task(s, _Flaky).apply(args=[0], kwargs={"until": "asr"}).get()
    assert res == {"shard_id": 0, "skipped": False} and CALLS == [0, 0]
    assert led.is_done("asr", 0) and led.failed_ids("asr") == set()  # success supersedes
    assert Tracker(s).attempts("asr", 0) == 0 and Tracker(s).running("asr") == {}


def test_always_failing_shard_is_dead_lettered_after_n(setup) -> None:
    s, led = setup
    res = _task(s, _Broken).apply(args=[0], kwargs={"until": "asr"})
    # the task ends as FAILURE with the reason (what Flower shows), after exactly N tries
    assert res.state == "FAILURE" and isinstance(res.result, DeadLettered)
    assert "corrupt shard" in str(res.result) and CALLS == [0, 0, 0]
    rec = led.failures("asr")[0]
    assert rec.attempts == 3 and rec.dead_lettered and "ValueError" in rec.traceback
    assert not led.is_done("asr", 0)


def test_done_shard_is_skipped_without_processing(setup) -> None:
    s, led = setup
    led.mark_done("asr", 0, {})
    res = _task(s, _Broken).apply(args=[0], kwargs={"until": "asr"}).get()
    assert res == {"shard_id": 0, "skipped": True} and CALLS == []


def test_too_many_deliveries_dead_letters_without_running(setup) -> None:
    s, led = setup
    t = Tracker(s)
    for _ in range(3):  # three deliveries that died (kill -9) before finishing
        t.start("asr", 0, 60)
    res = _task(s, _Broken).apply(args=[0], kwargs={"until": "asr"})
    assert res.state == "FAILURE" and "too many deliveries" in str(res.result) and CALLS == []
    assert "too many deliveries" in led.failures("asr")[0].reason


def test_bounded_even_without_the_redis_counter(make_settings) -> None:
    CALLS.clear()
    s = make_settings(broker_url="redis://127.0.0.1:1/0", max_task_failures=2,
                      retry_backoff_seconds=0.01)
    make_shard(Path(s.input_url) / s.shard_name(0), {"a": {"wav": b"x"}})
    res = _task(s, _Broken).apply(args=[0], kwargs={"until": "asr"})
    assert isinstance(res.result, DeadLettered) and CALLS == [0, 0]
