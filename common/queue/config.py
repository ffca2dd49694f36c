"""One queue setup for every stage (docs/architecture.md): routing, JSON only, at-least-once.

Each stage's ``celery.py`` builds its app through ``services.pipeline.worker_app``; stages hand
work on by task *name* through :func:`send_stage_task`, so no stage imports another. A stage's
task is ``onsei.<stage>.process_shard`` on the queue ``<stage>``.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import cached_property
from typing import Any

from celery import Celery
from kombu import Queue

from common.queue import kombu_fix, poison
from common.settings import Settings

_PREFIX, _SUFFIX = "onsei.", ".process_shard"


def task_name(stage: str) -> str:
    return f"{_PREFIX}{stage}{_SUFFIX}"


def stage_of_task(name: str | None) -> str | None:
    """``onsei.asr.process_shard`` -> ``asr``; None for any other task."""
    if name and name.startswith(_PREFIX) and name.endswith(_SUFFIX):
        return name[len(_PREFIX):-len(_SUFFIX)] or None
    return None


def route_task(name: str, *_: Any, **__: Any) -> dict[str, str] | None:
    """A stage's task goes to the stage's own queue, whoever sends it."""
    stage = stage_of_task(name)
    return {"queue": stage, "routing_key": stage} if stage else None


def celery_config(settings: Settings, consume: tuple[str, ...] = ()) -> dict[str, Any]:
    """``consume``: the queues a worker of this app reads by default (a stage app: its own)."""
    broker = settings.broker_url.get_secret_value()
    return {
        "broker_url": broker,
        "result_backend": None,
        "task_ignore_result": True,  # no result-backend growth
        "task_serializer": "json",
        "result_serializer": "json",
        "accept_content": ["json"],  # a pickled message is refused
        "task_queues": [Queue(s, routing_key=s) for s in consume],
        "task_create_missing_queues": True,  # hand-on to another stage's queue
        "task_routes": (route_task,),
        "task_acks_late": True,  # ack after the shard is done
        "task_reject_on_worker_lost": True,  # a killed worker's shard is re-queued
        # Our task records its own failures and retries by re-publishing, so an exception acks;
        # a hard time limit (a hung shard: the pool process is killed) re-queues instead, and
        # the delivery count bounds it.
        "task_acks_on_failure": True,
        "task_acks_on_timeout": False,
        # One task in hand per process, plus ``prefetch_shards`` reserved (unacked, so a dying
        # worker loses none) whose inputs are downloaded while the model works
        # (common.stages.prefetch).
        "worker_prefetch_multiplier": 1 + max(0, settings.prefetch_shards),
        "worker_concurrency": settings.worker_concurrency,
        "worker_max_tasks_per_child": None,
        "task_time_limit": settings.task_time_limit,
        # The soft limit warns a minute before the hard one; for short limits a quarter of it
        # (limit - 60 would leave a 1 s soft limit for a 30 s shard).
        "task_soft_time_limit": max(
            1, settings.task_time_limit - min(60, settings.task_time_limit // 4)),
        "broker_transport_options": {
            "visibility_timeout": settings.visibility_timeout,
            # look for expired unacked messages (a dead worker's) every 10 s, not every 100 s
            "unacked_restore_throttle": 1,
            # The restore scan holds a Redis lock for milliseconds; a worker SIGKILLed while
            # holding it (preempted at startup: the first scan runs then) would block every
            # restore for kombu's default 300 s. Expire it sooner for short visibility timeouts.
            "unacked_mutex_expire": min(300, max(10, settings.visibility_timeout)),
            "socket_keepalive": True,
        },
        "broker_connection_retry_on_startup": True,
        "worker_send_task_events": True,  # Flower sees tasks
        "task_send_sent_event": True,
        "worker_hijack_root_logger": False,
        # a message celery would drop (unknown task, undecodable body) is recorded first
        "worker_consumer": "common.queue.poison:RefusingConsumer",
        "broker_use_ssl": _ssl_options(broker),
        "redis_backend_use_ssl": _ssl_options(broker),
    }


def _ssl_options(url: str) -> dict[str, Any] | None:
    if url.startswith("rediss://"):
        import ssl

        return {"ssl_cert_reqs": ssl.CERT_REQUIRED}
    return None


class StageApp(Celery):
    """A Celery app whose worker is called ``<node>@host`` unless ``-n`` says otherwise, so two
    stages' workers on one host are told apart (Celery's default is ``celery@host``)."""

    onsei_node: str | None = None

    @cached_property
    def Worker(self) -> Any:
        from celery.utils.nodenames import default_nodename, host_format

        base: Any = self.subclass_with_self("celery.apps.worker:Worker")
        node, cli_default = self.onsei_node, host_format(default_nodename(None))

        class NamedWorker(base):
            def __init__(self, *args: Any, hostname: str | None = None, **kw: Any) -> None:
                if node and hostname in (None, cli_default):
                    hostname = host_format(f"{node}@%h")
                super().__init__(*args, hostname=hostname, **kw)

        return NamedWorker


def make_app(main: str, settings: Settings, queues: Iterable[str] = (),
             include: Iterable[str] = (), node: str | None = None) -> Celery:
    """An app whose workers read ``queues`` by default; ``include``: the modules of its tasks
    (imported by a worker at start), ``node``: the worker's default node name."""
    kombu_fix.install()  # a Redis outage must not kill the worker (see common/queue/kombu_fix.py)
    poison.install()  # nor a list entry that is no message (common/queue/poison.py)
    app = StageApp(main, include=list(include))
    app.onsei_node = node
    cfg = celery_config(settings, tuple(queues))
    if cfg["broker_use_ssl"] is None:
        cfg.pop("broker_use_ssl")
        cfg.pop("redis_backend_use_ssl")
    app.conf.update(cfg)
    app.onsei_settings = settings  # for hand-on bookkeeping
    return app


def app_settings(app: Celery) -> Settings:
    """The settings the app was made with (:func:`make_app`): what its worker runs on."""
    settings = getattr(app, "onsei_settings", None)
    if not isinstance(settings, Settings):
        raise TypeError(f"{app.main}: not made by make_app, so it carries no settings")
    return settings


def send_stage_task(app: Celery, stage: str, shard_id: int, until: str,
                    force: bool = False, track: bool = True) -> None:
    """Hand ``shard_id`` to ``stage`` by task name on its own queue (and mark it queued, unless
    ``track`` is False: the caller marks it in a round trip of its own)."""
    from common.queue.tracking import Tracker

    app.send_task(
        task_name(stage), args=[shard_id], kwargs={"until": until, "force": force}, queue=stage,
        routing_key=stage, serializer="json",
    )
    if not track:
        return
    tracker = getattr(app, "_onsei_tracker", None)
    if tracker is None:  # one Redis client per app (redis-py re-connects after a fork)
        tracker = app._onsei_tracker = Tracker(app_settings(app))
    tracker.add_queued(stage, [shard_id])
