"""Write behind: hand items to a thread that writes them in order, so the model never waits
on encoding or the disk. The writer's exception is raised in the producer (at its next
``put`` or at ``join``); the read side is :mod:`common.shards.readahead`.

The queue is bounded by a count (``depth``) and, with ``weight``, by what the items weigh
(e.g. seconds of audio): items of very different sizes (a 1 s and a 30 s segment) then cost
what they hold, not one slot each."""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import Any, Generic, TypeVar

T = TypeVar("T")
_END = object()


class WriteBehind(Generic[T]):
    """``write(item)`` on a thread, in order; ``finish()`` there once all are written (e.g. a
    last partial batch); ``join()`` waits and raises the first error; ``abort()`` drops the
    rest. With ``weight``, ``put`` also waits while the items queued or being written weigh
    more than ``capacity`` (one item is always let through, whatever it weighs)."""

    def __init__(self, write: Callable[[T], None], depth: int = 32, name: str = "write-behind",
                 finish: Callable[[], None] | None = None,
                 weight: Callable[[T], float] | None = None, capacity: float = 0.0) -> None:
        self._write = write
        self._finish = finish
        self._q: queue.Queue[Any] = queue.Queue(maxsize=max(1, depth))  # items, then _END
        self._weight = weight
        self._capacity = capacity
        self._held = 0.0  # weight queued or being written
        self._room = threading.Condition()
        self.error: BaseException | None = None
        self._aborted = False
        self._thread = threading.Thread(target=self._work, name=name, daemon=True)
        self._thread.start()

    def put(self, item: T) -> None:
        if self.error is not None:
            raise self.error
        w = 0.0
        if self._weight is not None:
            w = float(self._weight(item))
            with self._room:
                while self._held > 0 and self._held + w > self._capacity:
                    self._room.wait(0.2)
                    if self.error is not None:
                        raise self.error
                self._held += w
        self._q.put((item, w))

    def _work(self) -> None:
        while True:
            got = self._q.get()
            item: Any
            item, w = (got, 0.0) if got is _END else got
            try:
                if self.error is not None or self._aborted:
                    if item is _END:
                        return
                    continue  # drain so put() never blocks forever
                try:
                    if item is _END:
                        if self._finish is not None:
                            self._finish()
                        return
                    self._write(item)
                except BaseException as e:  # noqa: BLE001 - re-raised in the producer
                    self.error = e
                    if item is _END:
                        return
            finally:
                if w:
                    with self._room:
                        self._held -= w
                        self._room.notify_all()

    def join(self) -> None:
        """Wait for every item to be written (or the first error); raises that error."""
        self._q.put(_END)
        self._thread.join()
        if self.error is not None:
            raise self.error

    def abort(self) -> None:
        """Stop writing: what is queued is dropped; no error is raised."""
        self._aborted = True
        self._q.put(_END)
        self._thread.join()
