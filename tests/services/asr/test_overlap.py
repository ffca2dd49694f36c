"""Files in flight: outcomes handed on in shard order, two files' work running at once, a
failure raised where it is due (the stage's lines one file at a time: test_stage.py)."""

from __future__ import annotations

import threading

import pytest

from services.asr.overlap import files_in_flight, in_order

WAIT = 10.0  # seconds a call waits for the other one before the test fails


def test_outcomes_in_order_while_a_later_file_finishes_first() -> None:
    second_done = threading.Event()
    finished: list[int] = []

    def work(i: int) -> int:
        if i == 0:  # the first file waits for the second: only two calls at once can end
            assert second_done.wait(WAIT), "the second file never ran beside the first"
        if i == 1:
            second_done.set()
        finished.append(i)
        return i * 10

    got = list(in_order(iter(range(5)), work, 2))
    assert got == [(i, i * 10) for i in range(5)]
    assert finished.index(1) < finished.index(0)


def test_a_long_first_file_does_not_hold_the_next_ones_back() -> None:
    later_done = threading.Event()
    finished: list[int] = []

    def work(i: int) -> int:
        if i == 0:  # runs until three later files have ended beside it
            assert later_done.wait(WAIT), "the files after a long one waited for it"
        finished.append(i)
        if len(finished) == 3:
            later_done.set()
        return i

    assert list(in_order(iter(range(6)), work, 2)) == [(i, i) for i in range(6)]
    assert finished[:3] == [1, 2, 3]  # while the first one still ran


def test_outcomes_held_for_their_turn_are_bounded() -> None:
    four_done = threading.Event()
    started: list[int] = []

    def work(i: int) -> int:
        started.append(i)
        if i == 0:  # runs until four files after it have ended
            assert four_done.wait(WAIT)
        elif len(started) >= 5:
            four_done.set()
        return i

    got = in_order(iter(range(20)), work, 2, waiting=3)
    assert next(got) == (0, 0)
    assert sorted(started) == [0, 1, 2, 3, 4]  # depth + waiting outcomes at most, none read on
    assert [i for i, _ in got] == list(range(1, 20))


def test_one_in_flight_runs_each_in_turn_on_the_calling_thread() -> None:
    threads: set[int] = set()

    def work(i: int) -> int:
        threads.add(threading.get_ident())
        return i

    assert list(in_order(iter(range(3)), work, 1)) == [(0, 0), (1, 1), (2, 2)]
    assert threads == {threading.get_ident()}


def test_a_failure_is_raised_where_its_outcome_is_due_and_later_calls_stop() -> None:
    started: list[int] = []
    release = threading.Event()

    def work(i: int) -> int:
        started.append(i)
        if i == 1:
            raise ValueError("bad file")
        if i == 2:
            release.wait(WAIT)
        return i

    got: list[int] = []
    with pytest.raises(ValueError, match="bad file"):
        for item, _ in in_order(iter(range(10)), work, 2):
            got.append(item)
            if item == 0:
                release.set()
    assert got == [0]
    assert max(started) <= 3  # no file read past the ones already in flight


@pytest.mark.parametrize(("setting", "device", "separating", "expected"), [
    (0, "cpu", False, 2), (0, "cuda", False, 1), (0, "cuda:1", False, 1), (0, "cpu", True, 1),
    (3, "cuda", False, 3), (1, "cpu", False, 1),
])
def test_files_in_flight(setting: int, device: str, separating: bool, expected: int) -> None:
    assert files_in_flight(setting, device, separating) == expected
