"""Prometheus metrics: a real worker process runs a shard through a trivial stage; its
/metrics endpoint (one per worker, summed over pool processes) is scraped over HTTP."""

from __future__ import annotations

import socket
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from common.queue import metrics
from common.queue.config import send_stage_task
from common.settings import Settings
from services.stages import make_app
from tests.common.ops_worker import start_worker, stop, wait_for
from tests.conftest import free_port

pytestmark = pytest.mark.timeout(120)


def _samples(text: str) -> dict[tuple[str, str], float]:
    out = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out[(s.name, s.labels.get("stage", ""))] = out.get((s.name, s.labels.get("stage", "")),
                                                               0.0) + s.value
    return out


def test_worker_serves_shard_metrics(tmp_path: Path, private_redis_url: str) -> None:
    raw, out = tmp_path / "raw", tmp_path / "out"
    raw.mkdir()
    for i in (1, 2):
        (raw / f"shard-{i:06d}.tar").write_text("0.3")
    port = free_port()
    env = {"ONSEI_INPUT_URL": str(raw), "ONSEI_OUTPUT_URL": str(out),
           "ONSEI_SCRATCH_DIR": str(tmp_path / "scratch"), "ONSEI_BROKER_URL": private_redis_url,
           "ONSEI_METRICS_PORT": str(port), "ONSEI_METRICS_HOST": "127.0.0.1"}
    app = make_app("test-sender", Settings(broker_url=private_redis_url))
    for i in (1, 2):
        send_stage_task(app, "asr", i, "asr")
    log = tmp_path / "worker.log"
    w = start_worker(env, "m", log)
    try:
        done = [out / "_ledger/asr" / f"shard-{i:06d}.json" for i in (1, 2)]
        wait_for(lambda: all(p.exists() for p in done), 60, "two shards", w, log)
        url = f"http://127.0.0.1:{port}/metrics"

        def scraped() -> dict:
            return _samples(urllib.request.urlopen(url, timeout=5).read().decode())

        # the done record is written just before the observer runs: allow a moment
        wait_for(lambda: scraped().get(("onsei_shards_done_total", "asr")) == 2.0, 10,
                 "metrics", w, log)
        m = scraped()
    finally:
        stop(w)
    assert m[("onsei_audio_seconds_in_total", "asr")] == pytest.approx(20.0)
    assert m[("onsei_audio_seconds_out_total", "asr")] == pytest.approx(16.0)
    assert m[("onsei_shard_wall_seconds_count", "asr")] == 2.0
    assert m[("onsei_shard_wall_seconds_sum", "asr")] >= 0.6
    assert 0.0 < m[("onsei_model_busy_fraction", "asr")] <= 1.0
    assert m.get(("onsei_shards_failed_total", "asr"), 0.0) == 0.0


def test_observer_counts_failures_and_labels_host(monkeypatch: pytest.MonkeyPatch) -> None:
    from prometheus_client import REGISTRY

    before = REGISTRY.get_sample_value("onsei_shards_failed_total",
                                       {"stage": "enhance", "host": socket.gethostname()}) or 0.0
    metrics.observe_shard("enhance", 7, None, RuntimeError("boom"))
    after = REGISTRY.get_sample_value("onsei_shards_failed_total",
                                      {"stage": "enhance", "host": socket.gethostname()})
    assert after == before + 1
