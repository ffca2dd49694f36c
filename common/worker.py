"""The body every stage task shares: skip if done, run the shard, hand it on, dead-letter.

A stage's ``tasks.py`` is one line: ``process_shard = register_stage_task(app, "asr", AsrStage)``.
The model is loaded once per worker process, after the fork (``worker_process_init``), never in
the Celery parent: CUDA does not survive fork. The parent only prefetches inputs
(``task_received`` -> :mod:`common.prefetch`).
"""

from __future__ import annotations

import logging
import os
import random
import traceback
from collections.abc import Callable

from celery import Celery, Task
from celery.exceptions import Reject
from celery.signals import task_received, worker_process_init

from common.executor import Executor
from common.prefetch import Prefetcher, discard, fetch_into
from common.queue import TASK_NAMES, app_settings, next_stage, send_stage_task
from common.redact import redact_text
from common.settings import Settings
from common.stage import Stage
from common.tracking import Tracker
from common.transient import is_transient

log = logging.getLogger(__name__)


class StageRuntime:
    """Per-process state: settings, executor, tracker, the stage (model loaded lazily, once).

    Re-created after a fork: a pool process must not share the parent's sockets.
    """

    def __init__(self, app: Celery, stage_cls: Callable[[Settings], Stage]) -> None:
        self._app = app
        self._stage_cls = stage_cls
        self._pid = -1
        self._stage: Stage | None = None
        self._prefetcher: Prefetcher | None = None

    @property
    def settings(self) -> Settings:
        return app_settings(self._app)

    def _fresh(self) -> None:
        if self._pid != os.getpid():
            self._pid = os.getpid()
            self._executor = Executor(self.settings)
            self._tracker = Tracker(self.settings)

    @property
    def stage(self) -> Stage:
        if self._stage is None:
            self._stage = self._stage_cls(self.settings)
        return self._stage

    @property
    def executor(self) -> Executor:
        self._fresh()
        return self._executor

    @property
    def tracker(self) -> Tracker:
        self._fresh()
        return self._tracker

    @property
    def prefetcher(self) -> Prefetcher:
        """Lives in the worker's main process; its own executor, its own (unloaded) stage."""
        if self._prefetcher is None:
            ex = Executor(self.settings)
            stage = self._stage_cls(self.settings)
            self._prefetcher = Prefetcher(
                stage, ex.fetch_inputs, lambda i: ex.ledger.is_done(stage.name, i), self.settings)
        return self._prefetcher

    def load(self) -> None:
        self.stage.load()


def backoff_seconds(settings: Settings, attempts: int, exc: BaseException) -> float:
    """Exponential back-off with full jitter; non-transient errors wait 5x longer."""
    base = settings.retry_backoff_seconds * (1 if is_transient(exc) else 5)
    cap = min(settings.retry_backoff_max_seconds, base * 2 ** max(0, attempts - 1))
    return random.uniform(cap / 2, cap)


def register_stage_task(app: Celery, stage_name: str,
                        stage_cls: Callable[[Settings], Stage]) -> Task:
    runtime = StageRuntime(app, stage_cls)
    task_name = TASK_NAMES[stage_name]

    @worker_process_init.connect(weak=False)
    def _load_model(**_: object) -> None:  # after fork, in each pool process
        try:
            runtime.load()
        except Exception:  # the task will raise a clear error per shard instead
            log.exception("%s: model load failed at process start", stage_name)

    @task_received.connect(weak=False)
    def _prefetch(request: object = None, **_: object) -> None:  # worker main process
        if runtime.settings.prefetch_shards <= 0 or getattr(request, "name", None) != task_name:
            return
        try:
            runtime.prefetcher.submit(int(request.args[0]))  # type: ignore[attr-defined]
        except Exception as e:  # noqa: BLE001 - prefetch is an optimisation, never a failure
            log.warning("%s: cannot prefetch: %s", stage_name, e)

    @app.task(name=task_name, bind=True, acks_late=True, max_retries=None)
    def process_shard(self: Task, shard_id: int, until: str = "tokenize",
                      force: bool = False) -> dict:
        settings, ex, tracker = runtime.settings, runtime.executor, runtime.tracker
        shard_id = int(shard_id)
        if not force and ex.ledger.is_done(stage_name, shard_id):  # a redelivery does no harm
            tracker.finish(stage_name, shard_id, clear_attempts=True)
            _hand_on(app, stage_name, shard_id, until)
            return {"shard_id": shard_id, "skipped": True}
        # Redis counts every delivery (crashes too); the message's own retry count bounds the
        # loop even if that counter is lost.
        attempts = max(tracker.start(stage_name, shard_id, settings.visibility_timeout * 4),
                       int(self.request.retries or 0) + 1)
        if attempts > settings.max_task_failures:  # crashed or timed out every time
            ex.ledger.mark_failed(stage_name, shard_id, "too many deliveries (worker lost or "
                                  "hard time limit)", attempts=attempts - 1, dead=True)
            log.error("%s %s: dead-lettered after %d deliveries", stage_name, shard_id,
                      attempts - 1)
            tracker.finish(stage_name, shard_id, clear_attempts=True)
            return {"shard_id": shard_id, "dead_lettered": True}
        try:
            inputs = None
            if settings.prefetch_shards > 0:
                inputs = fetch_into(ex.fetch_inputs, runtime.stage, shard_id, settings)
            # done-ness was checked above: skip the executor's second round trip
            outcome = ex.run_shard(runtime.stage, shard_id, force=True, prefetched=inputs)
        except Exception as e:
            reason = redact_text(f"{type(e).__name__}: {e}")
            dead = attempts >= settings.max_task_failures
            ex.ledger.mark_failed(stage_name, shard_id, reason, traceback.format_exc(),
                                  attempts=attempts, dead=dead)
            _discard(stage_name, shard_id, settings)
            if dead:
                log.error("%s %s: dead-lettered: %s", stage_name, shard_id, reason)
                tracker.finish(stage_name, shard_id, clear_attempts=True)
                return {"shard_id": shard_id, "dead_lettered": True, "reason": reason}
            tracker.stop_running(stage_name, shard_id)
            countdown = backoff_seconds(settings, attempts, e)
            log.warning("%s %s: attempt %d failed (%s); retry in %.1fs", stage_name, shard_id,
                        attempts, reason, countdown)
            raise self.retry(exc=e, countdown=countdown, max_retries=None,
                             kwargs={"until": until, "force": force}) from e
        _discard(stage_name, shard_id, settings)
        tracker.finish(stage_name, shard_id, clear_attempts=True)
        _hand_on(app, stage_name, shard_id, until, force=force)
        return {"shard_id": shard_id, "skipped": outcome.skipped}

    process_shard.runtime = runtime  # type: ignore[attr-defined]
    _install_ops_hooks(app, stage_name)
    return process_shard


# --- operations hooks (owned by operations: common/preemption.py, common/metrics.py) -----------
def _install_ops_hooks(app: Celery, stage_name: str) -> None:
    """SIGTERM: finish the shard in hand within settings.shutdown_timeout or requeue it;
    Prometheus metrics on settings.metrics_port. Both install once per process."""
    from common.metrics import install_worker_metrics
    from common.preemption import install_preemption

    install_preemption(app)
    install_worker_metrics(app, stage_name)


def _discard(stage: str, shard_id: int, settings: Settings) -> None:
    if settings.prefetch_shards > 0:
        discard(stage, shard_id, settings)


def _hand_on(app: Celery, stage: str, shard_id: int, until: str, force: bool = False) -> None:
    nxt = next_stage(stage, until)
    if nxt is not None:
        send_stage_task(app, nxt, shard_id, until, force=force)


__all__ = ["Reject", "StageRuntime", "backoff_seconds", "register_stage_task"]
