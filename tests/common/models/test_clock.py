"""The one model-call timer (common/models/clock.py)."""

from __future__ import annotations

import threading
import time

from common.models.clock import ModelClock


def test_sections_add_up_and_reset_clears() -> None:
    c = ModelClock()
    for _ in range(3):
        with c.model():
            time.sleep(0.02)
    time.sleep(0.05)  # outside: not counted
    assert 0.06 <= c.seconds < 0.1
    c.reset()
    assert c.seconds == 0.0


def test_nested_and_wrapped_calls_count_once() -> None:
    c = ModelClock()
    inner = c.timed(lambda x: time.sleep(x) or x)
    with c.model():
        assert inner(0.03) == 0.03  # a timed helper inside a timed block
        time.sleep(0.03)
    assert 0.06 <= c.seconds < 0.09
    assert inner(0.02) == 0.02
    assert 0.08 <= c.seconds < 0.11


def test_threads_each_add_their_own_sections() -> None:
    c = ModelClock()

    def work() -> None:
        with c.model():
            time.sleep(0.05)

    ts = [threading.Thread(target=work) for _ in range(2)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert 0.1 <= c.seconds < 0.15  # summed: two workers' model time, not the wall
