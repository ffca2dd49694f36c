"""Write behind: hand items to a thread that writes them in order, so the model never waits
on encoding or the disk. The writer's exception is raised in the producer (at its next
``put`` or at ``close``); the read side is :mod:`common.readahead`."""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")
_END = object()


class WriteBehind(Generic[T]):
    def __init__(self, write: Callable[[T], None], depth: int = 32,
                 name: str = "write-behind") -> None:
        self._write = write
        self._q: queue.Queue = queue.Queue(maxsize=max(1, depth))
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._work, name=name, daemon=True)
        self._thread.start()

    def put(self, item: T) -> None:
        if self.error is not None:
            raise self.error
        self._q.put(item)

    def _work(self) -> None:
        while True:
            item = self._q.get()
            if item is _END:
                return
            if self.error is not None:
                continue  # drain so put() never blocks forever
            try:
                self._write(item)
            except BaseException as e:  # noqa: BLE001 - re-raised in the producer
                self.error = e

    def join(self) -> None:
        """Wait for every item to be written (or the first error); raises that error."""
        self._q.put(_END)
        self._thread.join()
        if self.error is not None:
            raise self.error
