"""Hand a finished shard on to the next stage, through a broker outage.

The done record is written before the hand-on; if the send failed (Redis gone for a moment)
the task used to fail, its ack was lost with the connection, and the shard waited for the
visibility timeout (6 h by default) to come back, be skipped as done and handed on then. So the
send is retried until the broker answers again, and only then does the task end and its
message get acknowledged. A worker that dies meanwhile loses nothing: the message is still
unacknowledged, and its redelivery finds the shard done and hands it on.

The same holds for a failed attempt's retry (:func:`retry_until_sent`): Celery turns a retry
it cannot publish into ``Reject(requeue=False)``, which drops the message if the broker is back
in time to take the reject.

Bounded by the task's time limits: the soft limit interrupts the wait like any other work.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from celery.exceptions import Reject
from kombu.exceptions import OperationalError

from common.transient import is_transient

log = logging.getLogger(__name__)

FIRST_WAIT, MAX_WAIT = 0.5, 5.0  # seconds between tries: short, so the hand-on follows Redis
LOG_EVERY = 30.0  # seconds between "still waiting" lines


def broker_down(exc: BaseException) -> bool:
    """A send that failed because the broker is unreachable (worth waiting for)."""
    return isinstance(exc, OperationalError) or is_transient(exc)


def send_until_sent(send: Callable[[], None], what: str,
                    sleep: Callable[[float], None] = time.sleep) -> int:
    """Call ``send`` until it does not fail for a broker outage; returns the tries it took.
    Any other error is raised at once."""
    tries, wait, started, logged = 0, FIRST_WAIT, time.monotonic(), 0.0
    while True:
        tries += 1
        try:
            send()
        except Exception as e:
            if not broker_down(e):
                raise
            waited = time.monotonic() - started
            if tries == 1 or waited - logged >= LOG_EVERY:
                logged = waited
                log.warning("%s: broker unreachable (%s: %s); the hand-on is retried until it "
                            "answers (waiting %.0f s so far)", what, type(e).__name__, e, waited)
            sleep(wait)
            wait = min(MAX_WAIT, wait * 2)
            continue
        if tries > 1:
            log.warning("%s: handed on after %d tries (%.1f s)", what, tries,
                        time.monotonic() - started)
        return tries


def retry_until_sent(retry: Callable[[], Any], what: str,
                     sleep: Callable[[float], None] = time.sleep) -> Any:
    """``retry``: ``task.retry(..., throw=False)``, which publishes the next attempt and
    returns the ``Retry`` to raise; its publish is retried through a broker outage."""
    out: list[Any] = []

    def send() -> None:
        try:
            out.append(retry())
        except Reject as r:  # Celery's wrapping of a failed publish
            if isinstance(r.reason, BaseException) and broker_down(r.reason):
                raise r.reason from r
            raise

    send_until_sent(send, what, sleep)
    return out[-1]
