"""Write behind: hand items to a thread that writes them in order, so the model never waits
on encoding or the disk. The writer's exception is raised in the producer (at its next
``put`` or at ``join``); the read side is :mod:`common.shards.readahead`."""

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
    rest."""

    def __init__(self, write: Callable[[T], None], depth: int = 32, name: str = "write-behind",
                 finish: Callable[[], None] | None = None) -> None:
        self._write = write
        self._finish = finish
        self._q: queue.Queue[Any] = queue.Queue(maxsize=max(1, depth))  # items, then _END
        self.error: BaseException | None = None
        self._aborted = False
        self._thread = threading.Thread(target=self._work, name=name, daemon=True)
        self._thread.start()

    def put(self, item: T) -> None:
        if self.error is not None:
            raise self.error
        self._q.put(item)

    def _work(self) -> None:
        while True:
            item = self._q.get()
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
