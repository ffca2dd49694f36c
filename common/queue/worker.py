"""The Celery adapter of the attempt engine: count deliveries, retry, dead-letter, hand on.

A stage's ``tasks.py`` is one line: ``process_shard = worker_task(app, name)``
(services/pipeline.py), which calls :func:`register_stage_task` with the pipeline.
The model is loaded once per worker process, after the fork (``worker_process_init``), never in
the Celery parent: CUDA does not survive fork. The parent only reads inputs ahead
(``task_received`` -> :mod:`common.stages.prefetch`). What an attempt does is
:mod:`common.stages.engine`.

Before any work a message's arguments are checked (:mod:`common.queue.messages`): a refused one
is recorded and ends as FAILURE. A dead letter ends as FAILURE too (:class:`DeadLettered`), with
its reason, so Flower shows it. A fault of the node (``sick``) hands the shard back and stops
the worker (:mod:`common.queue.sick`). Hand-ons and retries are published through a broker
outage before the message is let go (:mod:`common.queue.handon`).
"""

from __future__ import annotations

import json
import logging
import os
import random
import socket
import time
from typing import Any

from celery import Celery, Task
from celery.exceptions import Reject
from celery.signals import task_received, worker_process_init

from common.node.allocator import map_large_buffers, stage_threshold_kb
from common.node.threads import limit_native_threads
from common.queue import poison, sick
from common.queue.config import app_settings, send_stage_task, task_name
from common.queue.handon import retry_until_sent, send_until_sent
from common.queue.messages import InvalidMessage, parse_args
from common.queue.tracking import Tracker
from common.settings import Settings
from common.stages.contract import Stage
from common.stages.engine import Attempt, Engine, shard_log
from common.stages.prefetch import Prefetcher
from common.stages.spec import Pipeline
from common.transient import is_transient

log = logging.getLogger(__name__)


class DeadLettered(RuntimeError):
    """Raised after the shard's dead-letter record is written: the task ends as FAILURE (what
    Flower and task events show, with this reason) and its message is acknowledged."""


class StageRuntime:
    """Per-process state: the engine (stage built and loaded lazily, once) and the tracker.

    Re-created after a fork: a pool process must not share the parent's sockets.
    """

    def __init__(self, app: Celery, pipeline: Pipeline, name: str,
                 stage_cls: type[Stage] | None = None) -> None:
        self._app = app
        self.pipeline = pipeline
        self.name = name
        self._stage_cls = stage_cls
        self._pid = -1
        self._prefetcher: Prefetcher | None = None
        self.unrecorded = 0  # outcomes in a row that could not be written (back-off grows)

    @property
    def settings(self) -> Settings:
        return app_settings(self._app)

    def _fresh(self) -> None:
        if self._pid != os.getpid():
            s = self.settings
            self._engine = Engine(s, self.pipeline, self._stage_cls or self.name,
                                  read_ahead=s.prefetch_shards > 0)
            self._tracker = Tracker(s)
            self._pid = os.getpid()

    @property
    def engine(self) -> Engine:
        self._fresh()
        return self._engine

    @property
    def tracker(self) -> Tracker:
        self._fresh()
        return self._tracker

    @property
    def prefetcher(self) -> Prefetcher:
        """Lives in the worker's main process, whose engine never builds or loads the stage."""
        if self._prefetcher is None:
            ex = self.engine
            self._prefetcher = Prefetcher(self.name, ex.fetch,
                                          lambda i: ex.ledger.is_done(self.name, i),
                                          self.settings)
        return self._prefetcher

    # --- refused messages (common/queue/poison.py, common/queue/messages.py) ---------------------
    def record_refused(self, token: str, reason: str, raw: str) -> None:
        poison.write_refused(self.engine.ledger, self.name, token, f"invalid message: {reason}",
                             raw)

    def keep_refused(self, queue: str, raw: str) -> None:
        client = self.tracker.client
        if client is None:
            raise RuntimeError("the broker is not Redis")
        client.lpush(poison.refused_key(queue), raw[:65536])

    def refuse_task(self, request: Any, args: tuple[Any, ...], kwargs: dict[str, Any],
                    reason: str) -> None:
        """Record a task message whose arguments are refused; a message that cannot be
        recorded is handed back (after a back-off), never acknowledged."""
        raw = json.dumps({"task": task_name(self.name), "id": request.id, "args": list(args),
                          "kwargs": kwargs}, default=repr)
        if not poison.refuse(self.name, raw, reason, token=request.id or None):
            self.unrecorded += 1
            time.sleep(backoff_seconds(self.settings, self.unrecorded, None))
            raise Reject(reason, requeue=True)
        shard_id = args[0] if len(args) == 1 else None
        if type(shard_id) is int and shard_id >= 0:  # no message on its way for it any more
            self.tracker.unqueue(self.name, shard_id)


def backoff_seconds(settings: Settings, attempts: int, exc: BaseException | None) -> float:
    """Exponential back-off with full jitter; non-transient errors wait 5x longer."""
    transient = exc is not None and is_transient(exc)
    base = settings.retry_backoff_seconds * (1 if transient else 5)
    cap = min(settings.retry_backoff_max_seconds, base * 2 ** max(0, attempts - 1))
    return random.uniform(cap / 2, cap)


def register_stage_task(app: Celery, pipeline: Pipeline, stage_name: str,
                        stage_cls: type[Stage] | None = None) -> Task:
    """The task of ``stage_name``; its class comes from its spec unless ``stage_cls`` is given
    (test stages), and is imported only in the pool process that runs it."""
    runtime = StageRuntime(app, pipeline, stage_name, stage_cls)
    name = task_name(stage_name)
    if shard_log.level == logging.NOTSET:  # a line per shard even at Celery's default level
        shard_log.setLevel(logging.INFO)
    sick.install()
    poison.register(stage_name, runtime.record_refused, runtime.keep_refused)

    @worker_process_init.connect(weak=False)
    def _load_model(**_: object) -> None:  # after fork, in each pool process
        try:
            limit_native_threads(runtime.settings)
        except Exception:  # a library's own pool size is slower, not wrong
            log.exception("%s: cannot limit native threads", stage_name)
        map_large_buffers(stage_threshold_kb(pipeline.spec(stage_name).mmap_threshold_kb,
                                             runtime.settings.worker_mmap_threshold_kb))
        try:
            runtime.engine.load()
        except Exception:  # the first shard tries again: a node fault then stops the worker
            log.exception("%s: model load failed at process start", stage_name)

    @task_received.connect(weak=False)
    def _prefetch(request: Any = None, **_: object) -> None:  # worker main process
        if runtime.settings.prefetch_shards <= 0 or getattr(request, "name", None) != name:
            return
        try:
            a = parse_args(pipeline, stage_name, request.args, request.kwargs)
            runtime.prefetcher.submit(a.shard_id)
        except InvalidMessage:
            return  # refused by the task itself, with its record
        except Exception as e:  # noqa: BLE001 - prefetch is an optimisation, never a failure
            log.warning("%s: cannot prefetch: %s", stage_name, e)

    # shared=False: the task belongs to this app only (not to every app made later in the process).
    # throws: expected outcomes (a refused message, a dead letter) end as FAILURE in Flower with
    # their reason, logged in one line instead of a traceback. self is positional-only: a
    # message's keyword "self" is then refused by parse_args, not a TypeError leaving no record.
    @app.task(name=name, bind=True, acks_late=True, max_retries=None, shared=False,
              throws=(DeadLettered, InvalidMessage))
    def process_shard(self: Task, /, *args: object, **kwargs: object) -> dict[str, Any]:
        settings, engine, tracker = runtime.settings, runtime.engine, runtime.tracker
        try:
            a = parse_args(pipeline, stage_name, args, kwargs)
        except InvalidMessage as e:
            runtime.refuse_task(self.request, args, kwargs, str(e))
            raise
        shard_id = a.shard_id
        # Redis counts every delivery (crashes too); the message's own retry count bounds the
        # loop even if that counter is lost.
        attempts = max(tracker.start(stage_name, shard_id, settings.visibility_timeout * 4),
                       int(self.request.retries or 0) + 1)
        if attempts > settings.max_task_failures:  # crashed or timed out every time
            outcome = engine.record_dead(shard_id, "too many deliveries (worker lost or hard "
                                         "time limit)", attempts - 1)
        else:
            outcome = engine.attempt(shard_id, attempts,
                                     last=attempts >= settings.max_task_failures,
                                     check_done=not a.force)
        if outcome.status == "sick":
            # The node's fault, not the shard's: it goes back uncounted, and this worker stops.
            tracker.uncount(stage_name, shard_id)
            tracker.mark_sick(stage_name, _node(self), outcome.reason)  # for `onsei status`
            sick.stop_worker(stage_name, outcome.reason)
            raise Reject(outcome.reason, requeue=True)
        if outcome.status == "unrecorded":
            # No outcome written: the message must not go. It does not count as an attempt;
            # back off (longer while it lasts) and hand it back to the queue.
            runtime.unrecorded += 1
            tracker.uncount(stage_name, shard_id)
            wait = backoff_seconds(settings, runtime.unrecorded, outcome.error)
            log.warning("%s %s: outcome not recorded; requeued in %.1fs", stage_name, shard_id,
                        wait)
            time.sleep(wait)
            raise Reject(outcome.reason, requeue=True)
        runtime.unrecorded = 0
        if outcome.status == "failed":
            tracker.stop_running(stage_name, shard_id)
            countdown = backoff_seconds(settings, attempts, outcome.error)
            log.warning("%s %s: attempt %d failed; retry in %.1fs", stage_name, shard_id,
                        attempts, countdown)
            raise retry_until_sent(lambda: self.retry(
                exc=outcome.error, countdown=countdown, max_retries=None,
                kwargs={"until": a.until, "force": a.force}, throw=False),
                f"{stage_name} {shard_id} retry")
        nxt = pipeline.next(stage_name, a.until) if outcome.ok else None
        sent, tries = None, 1
        try:
            if nxt is not None:
                tries = send_until_sent(lambda: send_stage_task(
                    app, nxt, shard_id, a.until or pipeline.last, force=a.force, track=False),
                    f"{stage_name} {shard_id} -> {nxt}")
                sent = nxt
        finally:  # one round trip: not running here, queued there (only once really sent)
            tracker.finish(stage_name, shard_id, clear_attempts=True, queued_next=sent,
                           node=_node(self))
        if tries > 1 and self.request.id:
            # The broker went away during this task: its ack, due on the old connection, is
            # likely lost. Outcome and hand-on are done, so the message may go now.
            opts = app.conf.broker_transport_options or {}
            tracker.settle(self.request.id, opts.get("unacked_key", "unacked"),
                           opts.get("unacked_index_key", "unacked_index"))
        if outcome.status == "dead":
            raise DeadLettered(outcome.reason)
        return _summary(outcome)

    process_shard.runtime = runtime
    _install_ops_hooks(app, stage_name)
    return process_shard


def _node(task: Task) -> str:
    """The worker's node name (``asr@host``): one host may run a sick and a healthy worker."""
    return str(task.request.hostname or socket.gethostname())


def _summary(outcome: Attempt) -> dict[str, Any]:
    return {"shard_id": outcome.shard_id, "skipped": outcome.status == "skipped"}


# --- operations hooks (owned by operations: common/queue/preemption.py, common/queue/metrics.py) --
def _install_ops_hooks(app: Celery, stage_name: str) -> None:
    """SIGTERM: finish the shard in hand within settings.shutdown_timeout or requeue it;
    Prometheus metrics on settings.metrics_port. Both install once per process."""
    from common.queue.metrics import install_worker_metrics
    from common.queue.preemption import install_preemption

    install_preemption(app)
    install_worker_metrics(app, stage_name)


__all__ = ["DeadLettered", "InvalidMessage", "Reject", "StageRuntime", "backoff_seconds",
           "register_stage_task"]
