"""Write behind: in order, on a thread; the writer's error reaches the producer."""

from __future__ import annotations

import pytest

from common.shards.writebehind import WriteBehind


def test_items_are_written_in_order() -> None:
    out: list[int] = []
    w = WriteBehind(out.append, depth=2)
    for i in range(50):
        w.put(i)
    w.join()
    assert out == list(range(50))


def test_the_writers_error_is_raised_in_the_producer() -> None:
    def write(i: int) -> None:
        if i == 3:
            raise OSError("disk full")

    w = WriteBehind(write, depth=1)
    with pytest.raises(OSError, match="disk full"):
        for i in range(1000):  # put() raises once the writer has failed
            w.put(i)
        w.join()
    with pytest.raises(OSError, match="disk full"):
        w.join()  # and join() says so too, without hanging


def test_finish_runs_last_and_abort_drops_the_rest() -> None:
    out: list[object] = []
    w = WriteBehind(out.append, finish=lambda: out.append("end"))
    w.put(1)
    w.join()
    assert out == [1, "end"]
    dropped: list[int] = []
    a = WriteBehind(dropped.append, finish=lambda: dropped.append(-1))
    a.abort()
    assert dropped == []


def test_a_weighted_queue_holds_at_most_its_capacity() -> None:
    import threading

    gate = threading.Event()
    held: list[float] = []
    w: WriteBehind[float] = WriteBehind(lambda x: (gate.wait(5), held.append(x)), depth=100,
                                        weight=lambda x: x, capacity=10.0)
    w.put(4.0)
    w.put(5.0)  # 9 held: fits
    t = threading.Thread(target=w.put, args=(3.0,))  # 12 would not: waits for room
    t.start()
    t.join(0.3)
    assert t.is_alive() and w._held == 9.0
    gate.set()
    t.join(5)
    w.put(50.0)  # heavier than the capacity alone: let through once the queue is empty
    w.join()
    assert held == [4.0, 5.0, 3.0, 50.0] and w._held == 0.0
