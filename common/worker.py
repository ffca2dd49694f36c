"""The body every stage task shares: skip if done, run the shard, hand it on, dead-letter.

A stage's ``tasks.py`` is one line: ``process_shard = register_stage_task(app, "asr", AsrStage)``.
The model is loaded once per worker process, after the fork (``worker_process_init``), never in
the Celery parent: CUDA does not survive fork.
"""

from __future__ import annotations

import logging
import traceback
from typing import Callable

from celery import Celery, Task
from celery.exceptions import Reject, SoftTimeLimitExceeded
from celery.signals import worker_process_init

from common.executor import Executor
from common.queue import TASK_NAMES, next_stage, send_stage_task
from common.redact import redact_text
from common.settings import Settings, get_settings
from common.stage import Stage
from common.transient import is_transient

log = logging.getLogger(__name__)


class StageRuntime:
    """Per-process state: settings, executor, the stage (model loaded lazily, once)."""

    def __init__(self, stage_cls: Callable[[Settings], Stage]) -> None:
        self._stage_cls = stage_cls
        self._stage: Stage | None = None
        self._executor: Executor | None = None

    @property
    def settings(self) -> Settings:
        return get_settings()

    @property
    def stage(self) -> Stage:
        if self._stage is None:
            self._stage = self._stage_cls(self.settings)
        return self._stage

    @property
    def executor(self) -> Executor:
        if self._executor is None:
            self._executor = Executor(self.settings)
        return self._executor

    def load(self) -> None:
        self.stage.load()


def attempt_counter_key(stage: str, shard_id: int) -> str:
    return f"onsei:attempts:{stage}:{shard_id}"


def _bump_attempts(app: Celery, stage: str, shard_id: int, ttl: int) -> int:
    """Count deliveries of a shard in Redis (counted at start, so crashes count too)."""
    try:
        with app.connection_for_write() as conn:
            client = conn.default_channel.client  # kombu's redis client
            key = attempt_counter_key(stage, shard_id)
            n = int(client.incr(key))
            client.expire(key, ttl)
            return n
    except Exception:  # not Redis, or Redis away: counting is best effort
        return 1


def _clear_attempts(app: Celery, stage: str, shard_id: int) -> None:
    try:
        with app.connection_for_write() as conn:
            conn.default_channel.client.delete(attempt_counter_key(stage, shard_id))
    except Exception:
        pass


def register_stage_task(app: Celery, stage_name: str, stage_cls: Callable[[Settings], Stage]) -> Task:
    runtime = StageRuntime(stage_cls)

    @worker_process_init.connect(weak=False)
    def _load_model(**_: object) -> None:  # after fork, in each pool process
        try:
            runtime.load()
        except Exception:  # the task will raise a clear error per shard instead
            log.exception("%s: model load failed at process start", stage_name)

    @app.task(name=TASK_NAMES[stage_name], bind=True, acks_late=True, max_retries=None)
    def process_shard(self: Task, shard_id: int, until: str = "tokenize", force: bool = False) -> dict:
        settings = runtime.settings
        ex = runtime.executor
        shard_id = int(shard_id)
        if not force and ex.ledger.is_done(stage_name, shard_id):
            _hand_on(app, stage_name, shard_id, until)
            return {"shard_id": shard_id, "skipped": True}
        attempts = _bump_attempts(app, stage_name, shard_id, settings.visibility_timeout * 4)
        if attempts > settings.max_task_failures:
            ex.ledger.mark_failed(stage_name, shard_id, "too many deliveries (worker crashes?)",
                                  attempts=attempts - 1, dead=True)
            log.error("%s %s: dead-lettered after %d deliveries", stage_name, shard_id, attempts - 1)
            return {"shard_id": shard_id, "dead_lettered": True}
        try:
            outcome = ex.run_shard(runtime.stage, shard_id, force=force)
        except SoftTimeLimitExceeded:
            ex.ledger.mark_failed(stage_name, shard_id, "time limit exceeded",
                                  traceback.format_exc(), attempts=attempts,
                                  dead=attempts >= settings.max_task_failures)
            raise
        except Exception as e:
            reason = redact_text(f"{type(e).__name__}: {e}")
            dead = attempts >= settings.max_task_failures
            ex.ledger.mark_failed(stage_name, shard_id, reason, traceback.format_exc(),
                                  attempts=attempts, dead=dead)
            if dead:
                log.error("%s %s: dead-lettered: %s", stage_name, shard_id, reason)
                return {"shard_id": shard_id, "dead_lettered": True, "reason": reason}
            # Exponential back-off with jitter; transient errors and others alike are retried
            # until the bound, but only transient ones wait a short time.
            base = 2 if is_transient(e) else 10
            countdown = min(600, base * 2 ** (attempts - 1))
            raise self.retry(exc=e, countdown=countdown, max_retries=settings.max_task_failures)
        _clear_attempts(app, stage_name, shard_id)
        _hand_on(app, stage_name, shard_id, until)
        return {"shard_id": shard_id, "skipped": outcome.skipped}

    process_shard.runtime = runtime  # type: ignore[attr-defined]
    return process_shard


def _hand_on(app: Celery, stage: str, shard_id: int, until: str) -> None:
    nxt = next_stage(stage, until)
    if nxt is not None:
        send_stage_task(app, nxt, shard_id, until)


__all__ = ["register_stage_task", "StageRuntime", "Reject"]
