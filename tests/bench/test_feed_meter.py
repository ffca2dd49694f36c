"""The feed bench's meter charges each part its own CPU time, exclusive of the parts inside it."""

from __future__ import annotations

import time

from bench.feed_meter import CpuMeter


def _burn(seconds: float) -> None:
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


def test_parts_are_exclusive_and_add_up() -> None:
    meter = CpuMeter()
    inner = meter.wrap("inner", lambda: _burn(0.05))

    def outer() -> None:
        _burn(0.03)
        inner()

    meter.wrap("outer", outer)()

    def gen():
        for _ in range(3):
            _burn(0.01)
            yield 1

    assert sum(meter.wrap_iter("steps", gen)()) == 3
    assert 0.05 <= meter.parts["inner"] < 0.08
    assert 0.03 <= meter.parts["outer"] < 0.06  # its own time only, not the inner part's
    assert 0.03 <= meter.parts["steps"] < 0.06


def test_patch_and_restore() -> None:
    class Owner:
        @staticmethod
        def work() -> int:
            _burn(0.01)
            return 7

    meter = CpuMeter()
    original = Owner.work
    meter.patch(Owner, "work", "work")
    assert Owner.work() == 7 and meter.parts["work"] >= 0.01
    meter.restore()
    assert Owner.work is original
