"""Run an iterator in a background thread, a few items ahead of its consumer.

Stages use it to decode/read the next members while the model works on this one. The
producer's exception is raised in the consumer; closing the consumer stops the producer.
With ``weight``, what waits is also bounded by what the items weigh (e.g. seconds of audio:
sixteen 30 s segments at 48 kHz are 92 MB), one item always let through.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Generator, Iterable
from typing import Any, TypeVar

T = TypeVar("T")
_END = object()


def read_ahead(items: Iterable[T], depth: int = 2, name: str = "read-ahead",
               weight: Callable[[T], float] | None = None,
               capacity: float = 0.0) -> Generator[T, None, None]:
    q: queue.Queue[Any] = queue.Queue(maxsize=max(1, depth))  # items, _END or an exception
    stop = threading.Event()
    room = threading.Condition()
    held = [0.0]  # weight of the items waiting in the queue

    def put(obj: object, w: float = 0.0) -> bool:
        if w:
            with room:
                while held[0] > 0 and held[0] + w > capacity:
                    if stop.is_set():
                        return False
                    room.wait(0.2)
                held[0] += w
        while not stop.is_set():
            try:
                q.put((obj, w), timeout=0.2)
                return True
            except queue.Full:
                continue
        return False

    def work() -> None:
        try:
            for item in items:
                if not put(item, 0.0 if weight is None else float(weight(item))):
                    return
            put(_END)
        except BaseException as e:  # noqa: BLE001 - handed to the consumer, raised there
            put(e)

    thread = threading.Thread(target=work, name=name, daemon=True)
    thread.start()
    try:
        while True:
            obj, w = q.get()
            if w:
                with room:
                    held[0] -= w
                    room.notify()
            if obj is _END:
                return
            if isinstance(obj, BaseException):
                raise obj
            yield obj
    finally:
        stop.set()
        thread.join(timeout=5)
