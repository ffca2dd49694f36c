"""Run an iterator in a background thread, a few items ahead of its consumer.

Stages use it to decode/read the next members while the model works on this one. The
producer's exception is raised in the consumer; closing the consumer stops the producer.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterable, Iterator
from typing import Any, TypeVar

T = TypeVar("T")
_END = object()


def read_ahead(items: Iterable[T], depth: int = 2, name: str = "read-ahead") -> Iterator[T]:
    q: queue.Queue[Any] = queue.Queue(maxsize=max(1, depth))  # items, _END or an exception
    stop = threading.Event()

    def put(obj: object) -> bool:
        while not stop.is_set():
            try:
                q.put(obj, timeout=0.2)
                return True
            except queue.Full:
                continue
        return False

    def work() -> None:
        try:
            for item in items:
                if not put(item):
                    return
            put(_END)
        except BaseException as e:  # noqa: BLE001 - handed to the consumer, raised there
            put(e)

    thread = threading.Thread(target=work, name=name, daemon=True)
    thread.start()
    try:
        while True:
            obj = q.get()
            if obj is _END:
                return
            if isinstance(obj, BaseException):
                raise obj
            yield obj
    finally:
        stop.set()
        thread.join(timeout=5)
