"""The one timer of model calls: what a done record's ``model_seconds`` counts.

A stage wraps its model calls in ``with self.clock.model():`` (or hands ``clock.timed(fn)`` to
a helper); the engine resets the stage's clock before ``process`` and writes what it read into
the done record (docs/architecture.md, "The flow of a shard"). Busy fraction = model seconds /
wall seconds (common/queue/metrics.py). Only the outermost section of a thread counts, so a timed
helper called inside a timed block is not counted twice.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")


class ModelClock:
    """Seconds spent inside model calls since the last :meth:`reset`."""

    def __init__(self) -> None:
        self._seconds = 0.0
        self._lock = threading.Lock()
        self._depth = threading.local()

    @property
    def seconds(self) -> float:
        with self._lock:
            return self._seconds

    def reset(self) -> None:
        with self._lock:
            self._seconds = 0.0

    @contextmanager
    def model(self) -> Iterator[None]:
        """Time the block as a model call (re-entrant: an inner block adds nothing)."""
        depth = getattr(self._depth, "n", 0)
        self._depth.n = depth + 1
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self._depth.n = depth
            if depth == 0:
                spent = time.perf_counter() - t0
                with self._lock:
                    self._seconds += spent

    def timed(self, fn: Callable[P, R]) -> Callable[P, R]:
        """``fn`` with each call timed as a model call."""

        def call(*args: P.args, **kwargs: P.kwargs) -> R:
            with self.model():
                return fn(*args, **kwargs)

        return call
