"""JSON-only messages: every stage app refuses a pickled message and never runs its payload.

The static half checks the three stage apps' effective Celery config; the live half publishes a
pickled task (whose unpickling would create a marker file) to a real worker of each stage on a
private Redis with a password and TLS (``rediss://``, verified against a throwaway CA), then a
JSON task behind it to prove the worker was consuming.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import time
import uuid
from pathlib import Path

import pytest

from common.queue.config import task_name
from services.stages import STAGES, Settings, make_app
from tests.harness import pipeline_env, start_worker
from tests.reliability.servers import RedisServer, make_tls_files

PASSWORD = "pw-" + uuid.uuid4().hex[:16]


def _stage_available(stage: str) -> bool:
    return importlib.util.find_spec(f"services.{stage}.tasks") is not None


STAGE_PARAMS = [pytest.param(s, marks=pytest.mark.skipif(not _stage_available(s),
                                                         reason=f"services.{s} not built yet"))
                for s in STAGES]


class Payload:
    """Unpickling this calls ``open(marker, "w")``: if the file appears, pickle was executed."""

    def __init__(self, marker: Path) -> None:
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


@pytest.mark.parametrize("stage", STAGE_PARAMS)
def test_stage_app_config_is_json_only(stage):
    from celery.app.utils import find_app

    app = find_app(f"services.{stage}")  # what `celery -A services.<stage>` finds
    app.loader.import_default_modules()  # its include=: what a worker imports at start
    conf = app.conf
    assert list(conf.accept_content) == ["json"]
    assert conf.task_serializer == "json"
    assert conf.result_serializer == "json"
    assert conf.result_accept_content in (None, ["json"])
    assert conf.event_serializer == "json"
    assert task_name(stage) in app.tasks


@pytest.fixture(scope="module")
def private_redis(tmp_path_factory):
    tls = make_tls_files(tmp_path_factory.mktemp("tls"))
    mp = pytest.MonkeyPatch()
    mp.setenv("SSL_CERT_FILE", str(tls["ca"]))  # the default trust store of every client here
    with RedisServer(tmp_path_factory.mktemp("redis"), password=PASSWORD, tls=tls) as srv:
        assert srv.url.startswith("rediss://")
        yield srv
    mp.undo()


@pytest.mark.parametrize("stage", STAGE_PARAMS)
def test_worker_refuses_pickle(stage, private_redis, tmp_path):
    marker = tmp_path / "pickle-was-executed"
    env = pipeline_env(private_redis.url, str(tmp_path / "raw"), str(tmp_path / "out"),
                       tmp_path / "scratch", ONSEI_ASR_MODEL=str(tmp_path / "no-model"),
                       ONSEI_MAX_TASK_FAILURES="1", ONSEI_PREFETCH_SHARDS="0",
                       SSL_CERT_FILE=os.environ["SSL_CERT_FILE"])
    worker = start_worker(f"services.{stage}", stage, env, log_dir=tmp_path,
                          extra_args=["--pool", "solo"])
    try:
        deadline = time.monotonic() + 90
        while "ready" not in worker.log_text() and time.monotonic() < deadline and worker.alive:
            time.sleep(0.3)
        assert "ready" in worker.log_text(), worker.log_text()[-3000:]
        sender = make_app("probe", Settings(broker_url=private_redis.url))
        evil = sender.send_task(task_name(stage), args=[Payload(marker)], queue=stage,
                                routing_key=stage, serializer="pickle")
        good = sender.send_task(task_name(stage), args=[999_999], queue=stage,
                                routing_key=stage, serializer="json")
        deadline = time.monotonic() + 60
        while good.id not in worker.log_text() and time.monotonic() < deadline:
            time.sleep(0.3)
        log = worker.log_text()
        assert good.id in log, log[-3000:]  # the worker consumed past the pickled message
        assert not marker.exists(), "a pickled message was deserialized"
        assert "ContentDisallowed" in log or "Refusing to deserialize" in log, log[-3000:]
        assert f"[{evil.id}]" not in log.split("Refusing", 1)[0]  # never received as a task
        assert PASSWORD not in log  # the broker password never reaches the worker's log
    finally:
        worker.stop(grace=5)
    assert private_redis.client().llen(stage) == 0  # the refused message is not left to loop
