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
