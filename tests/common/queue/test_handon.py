"""The hand-on is retried while the broker is unreachable, and only then
(common/queue/handon.py)."""

from __future__ import annotations

import pytest
from celery.exceptions import Reject
from kombu.exceptions import EncodeError, OperationalError

from common.queue.handon import retry_until_sent, send_until_sent


def test_retried_through_an_outage_with_growing_waits() -> None:
    failures = [OperationalError("Error 111 connecting"), ConnectionError("reset")] * 3
    waits: list[float] = []

    def send() -> None:
        if failures:
            raise failures.pop(0)

    assert send_until_sent(send, "asr 0 -> enhance", sleep=waits.append) == 7
    assert waits == [0.5, 1.0, 2.0, 4.0, 5.0, 5.0]  # doubling, capped


def test_any_other_error_is_raised_at_once() -> None:
    calls = []

    def send() -> None:
        calls.append(1)
        raise EncodeError("cannot serialize")

    with pytest.raises(EncodeError):
        send_until_sent(send, "asr 0 -> enhance", sleep=lambda _: None)
    assert calls == [1]


def test_a_retry_celery_could_not_publish_is_published_again() -> None:
    """Celery wraps a failed publish of ``task.retry`` in Reject(requeue=False), which would
    drop the message: it is published again once the broker answers, then raised."""
    outcomes: list = [Reject(OperationalError("Error 111"), requeue=False), "the Retry"]
    waits: list[float] = []

    def retry():
        o = outcomes.pop(0)
        if isinstance(o, BaseException):
            raise o
        return o

    assert retry_until_sent(retry, "asr 0 retry", sleep=waits.append) == "the Retry"
    assert waits == [0.5]
    with pytest.raises(Reject):  # a reject for any other reason stands
        retry_until_sent(lambda: (_ for _ in ()).throw(Reject("no", requeue=False)), "x",
                         sleep=waits.append)
