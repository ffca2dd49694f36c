"""read_ahead: order kept, producer errors raised in the consumer, early close stops it."""

from __future__ import annotations

import threading
import time

import pytest

from common.shards.readahead import read_ahead


def test_order_and_completeness() -> None:
    assert list(read_ahead(iter(range(100)), depth=3)) == list(range(100))


def test_producer_runs_ahead_of_consumer() -> None:
    produced: list[int] = []

    def gen():
        for i in range(5):
            produced.append(i)
            yield i

    it = read_ahead(gen(), depth=2)
    assert next(it) == 0
    time.sleep(0.3)
    assert len(produced) >= 3  # the next items were made while we were "busy"
    assert list(it) == [1, 2, 3, 4]


def test_producer_error_surfaces_after_good_items() -> None:
    def gen():
        yield 1
        raise RuntimeError("truncated shard")

    it = read_ahead(gen())
    assert next(it) == 1
    with pytest.raises(RuntimeError, match="truncated shard"):
        next(it)


def test_closing_the_consumer_stops_the_producer() -> None:
    def endless():
        i = 0
        while True:
            yield i
            i += 1

    before = threading.active_count()
    it = read_ahead(endless(), depth=1, name="endless")
    assert next(it) == 0
    it.close()
    time.sleep(0.5)
    assert not any(t.name == "endless" for t in threading.enumerate())
    assert threading.active_count() <= before


def test_weight_bounds_what_waits() -> None:
    """Items of 10 s with room for 25 s: at most two wait, however deep the queue."""
    produced: list[int] = []

    def gen():
        for i in range(8):
            produced.append(i)
            yield i

    it = read_ahead(gen(), depth=16, weight=lambda _: 10.0, capacity=25.0)
    assert next(it) == 0
    deadline = time.monotonic() + 5
    while len(produced) < 4 and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.2)  # room for a fifth would show by now
    assert len(produced) == 4  # 1, 2 wait (20 s); 3 made, blocked on room
    assert list(it) == list(range(1, 8))


def test_heavy_item_goes_alone() -> None:
    assert list(read_ahead(iter([1, 50, 2]), depth=4, weight=float, capacity=10.0)) == [1, 50, 2]
