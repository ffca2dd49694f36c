"""Queue setup: JSON only, at-least-once settings, routing, back-off, the fast publisher."""

from __future__ import annotations

import base64
import json

import pytest
import redis

from common.queue.config import celery_config, task_name
from common.queue.publish import plain_publish, publish_shards
from common.queue.tracking import Tracker, queued_key
from common.queue.worker import backoff_seconds
from common.settings import Settings
from services.stages import PIPELINE, make_app


def test_config_is_json_only_and_at_least_once() -> None:
    cfg = celery_config(Settings(visibility_timeout=7200, prefetch_shards=1))
    assert cfg["accept_content"] == ["json"] and cfg["task_serializer"] == "json"
    assert cfg["task_acks_late"] and cfg["task_reject_on_worker_lost"]
    assert cfg["task_acks_on_timeout"] is False  # a hung shard goes back, bounded by attempts
    assert cfg["task_ignore_result"] and cfg["result_backend"] is None
    assert cfg["broker_transport_options"]["visibility_timeout"] == 7200
    assert cfg["worker_prefetch_multiplier"] == 2  # the shard in hand + one downloading
    assert celery_config(Settings(prefetch_shards=0))["worker_prefetch_multiplier"] == 1


def test_stage_app_reads_only_its_own_queue() -> None:
    s = Settings()
    assert [q.name for q in make_app("services.enhance", s).conf.task_queues] == ["enhance"]
    assert {q.name for q in make_app("onsei", s).conf.task_queues} == {"asr", "enhance",
                                                                      "tokenize"}
    route = make_app("services.asr", s).amqp.router.route({}, task_name("tokenize"))
    assert route["queue"].name == "tokenize"


def test_next_stage_respects_until() -> None:
    assert PIPELINE.next("asr", "tokenize") == "enhance"
    assert PIPELINE.next("asr", "asr") is None
    assert PIPELINE.next("enhance", "enhance") is None
    assert PIPELINE.next("tokenize", "tokenize") is None


def test_backoff_grows_with_jitter_and_cap() -> None:
    s = Settings(retry_backoff_seconds=2, retry_backoff_max_seconds=30)
    waits = [backoff_seconds(s, 3, ConnectionError()) for _ in range(50)]
    assert all(4 <= w <= 8 for w in waits) and len({round(w, 3) for w in waits}) > 10
    assert all(backoff_seconds(s, 20, ValueError()) <= 30 for _ in range(20))
    assert backoff_seconds(s, 1, ValueError()) >= 5  # non-transient: 5x the transient base


def test_fast_publish_equals_celery_message(private_redis_url: str) -> None:
    s = Settings(broker_url=private_redis_url)
    app = make_app("onsei", s)
    r = redis.Redis.from_url(private_redis_url)
    assert publish_shards(app, "enhance", [5, 6, 7], "enhance", force=True) == 3
    plain_publish(app, "enhance", [8], "enhance")
    raw = [json.loads(x) for x in r.lrange("enhance", 0, -1)][::-1]  # BRPOP pops the tail
    fast, ref = raw[0], raw[-1]
    assert set(fast) == set(ref)
    assert set(fast["headers"]) == set(ref["headers"])
    assert set(fast["properties"]) - {"delivery_mode"} <= set(ref["properties"])
    assert fast["headers"]["task"] == task_name("enhance")
    assert fast["properties"]["delivery_info"]["routing_key"] == "enhance"
    bodies = [json.loads(base64.b64decode(m["body"])) for m in raw]
    assert [b[0] for b in bodies] == [[5], [6], [7], [8]]  # FIFO for the workers
    assert bodies[0][1] == {"until": "enhance", "force": True}
    ids = [m["headers"]["id"] for m in raw]
    assert len(set(ids)) == 4 and all(m["properties"]["correlation_id"] == m["headers"]["id"]
                                      for m in raw)
    assert {int(x) for x in r.smembers(queued_key("enhance"))} == {5, 6, 7}
    assert Tracker(s).queue_length("enhance") == 4


def test_tracker_is_harmless_without_redis() -> None:
    t = Tracker(Settings(broker_url="redis://127.0.0.1:1/0"))
    assert not t.available()
    assert t.start("asr", 1, 60) == 1 and t.queued_ids("asr") == set()
    assert t.queue_length("asr") is None
    t.finish("asr", 1, True)  # no exception


@pytest.mark.parametrize("url", ["amqp://guest@localhost//"])
def test_tracker_off_for_other_brokers(url: str) -> None:
    assert Tracker(Settings(broker_url=url)).client is None


def test_finish_marks_the_next_stage_queued_in_the_same_round_trip(private_redis_url) -> None:
    t = Tracker(Settings(broker_url=private_redis_url))
    t.add_queued("asr", [7])
    assert t.start("asr", 7, 60) == 1
    t.finish("asr", 7, True, queued_next="enhance")
    assert t.queued_ids("asr") == set() and t.queued_ids("enhance") == {7}
    assert 7 not in t.running("asr") and t.attempts("asr", 7) == 0
    t.finish("enhance", 7, True)  # the last stage hands on to nothing
    assert t.queued_ids("enhance") == set()
