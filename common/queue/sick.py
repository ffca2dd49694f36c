"""A sick node's worker stops taking work and exits non-zero (common/node/fault.py).

The pool process that met the fault logs one line saying why, hands its shard back (the task
rejects it with requeue) and asks the worker's main process to stop: SIGUSR2 to the main
process, whose handler starts Celery's warm shutdown with :data:`EXIT_SICK`, the way Celery's
own SIGTERM handler does (``celery.worker.state.should_stop``). Messages reserved but not
started go back when the channel closes. The exit status lets the fleet's restart policy
(deploy/docker/onsei-supervise, ``restart: unless-stopped``) start a fresh worker after its
back-off, which loads the model again or finds the disk freed; Flower shows the worker offline.
"""

from __future__ import annotations

import logging
import os
import signal
from typing import Any

log = logging.getLogger(__name__)

EXIT_SICK = 75  # EX_TEMPFAIL: the node may be fine again later; restart after a back-off
_state: dict[str, Any] = {"main_pid": None, "installed": False}


def _stop(*_: object) -> None:
    from celery.worker import state

    if state.should_stop in (None, False):
        state.should_stop = EXIT_SICK


def install() -> None:
    """Once per process: the worker's main process records itself and handles SIGUSR2."""
    if _state["installed"]:
        return
    _state["installed"] = True
    from celery.signals import worker_init

    @worker_init.connect(weak=False)
    def _on_worker_init(**_: object) -> None:  # the worker's main process, before the pool
        _state["main_pid"] = os.getpid()
        signal.signal(signal.SIGUSR2, _stop)


def stop_worker(stage: str, reason: str) -> bool:
    """Say why in one line and stop this worker (exit :data:`EXIT_SICK`); False outside a
    worker (an eager call, a test), where nothing is stopped."""
    log.critical("%s: this node cannot work (%s); the shard goes back to the queue and this "
                 "worker stops taking work (exit %d)", stage, reason, EXIT_SICK)
    main = _state["main_pid"]
    if main is None:
        return False
    if main == os.getpid():  # solo/threads pool: the task runs in the main process
        _stop()
    else:
        try:
            os.kill(main, signal.SIGUSR2)
        except ProcessLookupError:
            return False
    return True
