"""Prometheus metrics of the workers: shards done/failed, audio seconds in/out, model busy
fraction, shard wall time; labels ``stage`` and ``host``.

One endpoint per worker (not per pool process): prometheus_client's *multiprocess mode*. The
Celery MainProcess, before it forks its pool, points ``PROMETHEUS_MULTIPROC_DIR`` at a fresh
directory and serves ``settings.metrics_host:metrics_port``; every pool process writes its values
to memory-mapped files there, and a scrape sums them. So a worker with --concurrency=4 is one
scrape target on one port, like the compose and SkyPilot files expose it. Off when the port is 0.

The engine reports each shard through ``common.stages.engine.SHARD_OBSERVERS``; ``onsei run`` gets
the same counters in-process (served when it calls :func:`serve`).
"""

from __future__ import annotations

import logging
import os
import shutil
import socket
from pathlib import Path
from typing import Any

from common.ledger.records import DoneRecord

log = logging.getLogger(__name__)

HOST = socket.gethostname()
WALL_BUCKETS = (1, 5, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200, 14400, float("inf"))
_metrics: dict[str, Any] = {}
_installed: list[str] = []


def _m() -> dict[str, Any]:
    """The metric objects, created on first use (after the multiprocess switch, if any)."""
    if not _metrics:
        from prometheus_client import Counter, Gauge, Histogram

        labels = ("stage", "host")
        _metrics.update(
            done=Counter("onsei_shards_done", "shards finished (done record written)", labels),
            failed=Counter("onsei_shards_failed", "shard attempts that raised", labels),
            audio_in=Counter("onsei_audio_seconds_in", "audio seconds read", labels),
            audio_out=Counter("onsei_audio_seconds_out", "audio seconds written", labels),
            model=Counter("onsei_model_seconds", "seconds inside model calls", labels),
            wall=Counter("onsei_shard_seconds", "wall seconds of finished shards", labels),
            busy=Gauge("onsei_model_busy_fraction", "model seconds / wall seconds, last shard",
                       labels, multiprocess_mode="liveall"),
            hist=Histogram("onsei_shard_wall_seconds", "wall time per shard", labels,
                           buckets=WALL_BUCKETS),
        )
    return _metrics


def observe_shard(stage: str, shard_id: int, record: DoneRecord | None,
                  error: BaseException | None) -> None:
    """Executor observer: one finished (``record``) or failed (``error``) shard attempt."""
    m = _m()
    if record is None:
        m["failed"].labels(stage, HOST).inc()
        return
    wall = record.wall_seconds
    model = record.model_seconds
    m["done"].labels(stage, HOST).inc()
    m["audio_in"].labels(stage, HOST).inc(record.audio_seconds_in)
    m["audio_out"].labels(stage, HOST).inc(record.audio_seconds_out)
    m["model"].labels(stage, HOST).inc(model)
    m["wall"].labels(stage, HOST).inc(wall)
    m["hist"].labels(stage, HOST).observe(wall)
    if wall > 0:
        m["busy"].labels(stage, HOST).set(min(1.0, model / wall))


def enable_multiprocess(directory: Path) -> None:
    """Switch this process (and children forked later) to multiprocess mode in ``directory``."""
    if _metrics:
        raise RuntimeError("metrics already created in single-process mode")
    shutil.rmtree(directory, ignore_errors=True)  # stale files of a dead worker would add up
    directory.mkdir(parents=True)
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = str(directory)
    from prometheus_client import values

    values.ValueClass = values.get_value_class()  # read at import time: re-read now


def serve(host: str, port: int) -> Any:
    """Serve /metrics (aggregated over processes in multiprocess mode). Returns the server."""
    from prometheus_client import REGISTRY, CollectorRegistry, start_http_server

    registry = REGISTRY
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
    server, _thread = start_http_server(port, addr=host, registry=registry)
    log.info("metrics on http://%s:%d/metrics", host, port)
    return server


def install_worker_metrics(app: Any, stage: str) -> None:
    """Celery worker hooks (once per process): serve from the MainProcess, observe shards in
    the pool processes, drop a dead pool process's live gauges."""
    from common.stages.engine import SHARD_OBSERVERS

    if observe_shard not in SHARD_OBSERVERS:
        SHARD_OBSERVERS.append(observe_shard)
    if _installed:
        return
    _installed.append(stage)
    from celery.signals import worker_init, worker_process_shutdown

    @worker_init.connect(weak=False)
    def _serve(**_: object) -> None:  # MainProcess, before the pool forks
        from common.queue.config import app_settings

        s = app_settings(app)
        if not s.metrics_port:
            return
        enable_multiprocess(Path(s.scratch_dir) / f"onsei-metrics-{os.getpid()}")
        serve(s.metrics_host, s.metrics_port)

    @worker_process_shutdown.connect(weak=False)
    def _dead(pid: int | None = None, **_: object) -> None:
        if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
            from prometheus_client import multiprocess

            multiprocess.mark_process_dead(pid or os.getpid())
