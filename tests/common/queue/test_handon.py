"""The hand-on is retried while the broker is unreachable, and only then (common/queue/handon.py)."""

from __future__ import annotations

import pytest
from kombu.exceptions import EncodeError, OperationalError

from common.queue.handon import send_until_sent


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
