"""Graceful preemption of a Celery worker: on SIGTERM, finish the shard in hand within
``settings.shutdown_timeout`` seconds or hand it back to the queue at once. Never lose it.

How, with prefork workers, ``task_acks_late`` and ``task_reject_on_worker_lost``
(common/queue/config.py):

- MainProcess, SIGTERM: Celery's warm shutdown stops consuming (no new task is taken; a message
  reserved but not started goes back when the channel closes) and waits for the running tasks.
  We add a watchdog: if a task still runs after the timeout, its pool process is killed. Celery
  then sees a WorkerLostError and, because of reject_on_worker_lost, *rejects the message with
  requeue*: the shard is back in its queue while the worker exits, for another worker to take.
- Pool processes: a spot VM's shutdown (systemd) sends SIGTERM to every process of the worker,
  and a pool process dies on SIGTERM by default, which would throw away work that could have
  finished. Pool processes therefore only note the signal; the MainProcess decides.
- A hand-back is not the shard's fault: the delivery counted at task start
  (common/queue/worker.py) is un-counted, so preemptions never push a shard towards the
  dead-letter record.
- If the whole machine dies first (SIGKILL, power), the unacked message still returns to the
  queue after the broker's visibility timeout: late, but not lost.

Scratch files of a killed pool process stay in ``ONSEI_SCRATCH_DIR`` (on a preempted VM they
vanish with it; on a box that lives on, the next run's scratch cleanup or tmpfiles removes them).
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from common.settings import Settings

log = logging.getLogger(__name__)

_INSTALLED: list[Any] = []  # the app hooked (once per process: Celery's signals are global)
_state: dict[str, Any] = {"sigterm_at": None, "pool_child": False}


def _child_sigterm(signum: int, frame: object) -> None:
    if _state["sigterm_at"] is None:
        _state["sigterm_at"] = time.monotonic()
        log.warning("pool process %d: SIGTERM noted; finishing the shard in hand "
                    "(the main process hands it back if it takes too long)", os.getpid())


def install_child_handler(at_start: bool) -> None:
    """Pool process: note SIGTERM instead of dying (the MainProcess owns the shutdown).

    At process start only SIG_IGN survives: billiard replaces any other handler right after
    ``worker_process_init``. The noting handler is installed when a task starts."""
    if at_start:
        _state["sigterm_at"], _state["pool_child"] = None, True
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    elif _state["pool_child"] and signal.getsignal(signal.SIGTERM) is not _child_sigterm:
        signal.signal(signal.SIGTERM, _child_sigterm)


def active_requests() -> list[Any]:
    from celery.worker import state

    return [r for r in list(state.active_requests) if r.worker_pid]


def hand_back(requests: list[Any], on_handback: Callable[[Any], None] | None = None) -> int:
    """Kill the pool processes of ``requests``; Celery requeues their messages
    (reject_on_worker_lost). Returns how many were handed back."""
    n = 0
    for req in requests:
        if req.worker_pid == os.getpid():  # solo/threads pool: killing would kill the worker
            log.warning("preemption: %s runs in the main process (solo pool): it returns to the "
                        "queue only after the visibility timeout if the worker dies", req.id)
            continue
        if on_handback is not None:
            try:
                on_handback(req)
            except Exception:
                log.exception("hand-back hook failed for %s", req.id)
        log.warning("preemption: handing back %s%s (pool pid %s) to the queue",
                    req.name, list(req.args or []), req.worker_pid)
        try:
            os.kill(req.worker_pid, signal.SIGKILL)
            n += 1
        except ProcessLookupError:  # finished meanwhile: it acked (or was requeued) by itself
            pass
    return n


def watchdog(timeout: float, on_handback: Callable[[Any], None] | None = None,
             poll: float = 0.2) -> int:
    """Wait up to ``timeout`` s for the running tasks to finish, then hand the rest back."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not active_requests():
            log.info("preemption: shards in hand finished within the timeout")
            return 0
        time.sleep(poll)
    return hand_back(active_requests(), on_handback)


def uncount_attempt(request: Any, settings: Settings) -> None:
    """A handed-back shard: no longer running, and this delivery does not count as an attempt
    (common/queue/tracking.py keeps both in the broker's Redis)."""
    from common.queue.config import stage_of_task
    from common.queue.tracking import Tracker

    stage = stage_of_task(request.name)
    if stage is None or not request.args:
        return
    Tracker(settings).uncount(stage, int(request.args[0]))


def install_preemption(app: Any, timeout: Callable[[], float] | float | None = None) -> None:
    """Hook graceful preemption into the worker of ``app`` (once per process)."""
    if _INSTALLED:
        return
    _INSTALLED.append(app)
    from celery.signals import task_prerun, worker_process_init, worker_shutting_down

    from common.queue.config import app_settings

    def _timeout() -> float:
        if callable(timeout):
            return float(timeout())
        if timeout is not None:
            return float(timeout)
        return float(app_settings(app).shutdown_timeout)

    @worker_process_init.connect(weak=False)
    def _on_child_start(**_: object) -> None:
        install_child_handler(at_start=True)

    @task_prerun.connect(weak=False)
    def _on_task_start(**_: object) -> None:
        if threading.current_thread() is threading.main_thread():  # never in solo/threads
            install_child_handler(at_start=False)

    @worker_shutting_down.connect(weak=False)
    def _on_shutdown(sig: str = "", how: str = "", **_: object) -> None:
        if how != "Warm":  # cold/hard shutdowns: Celery cancels (and requeues) by itself
            return
        t = _timeout()
        log.warning("preemption: %s received; finishing the shard in hand within %.0f s, "
                    "else handing it back", sig or "SIGTERM", t)
        threading.Thread(target=watchdog,
                         args=(t, lambda r: uncount_attempt(r, app_settings(app))),
                         name="onsei-preemption", daemon=True).start()
