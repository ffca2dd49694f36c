"""What Flower sees: the workers' task events, captured from the broker while a test runs.

    with TaskEvents(rig.redis.url) as ev:
        ...
        ev.wait(lambda e: e["type"] == "task-failed", 30)
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any


class TaskEvents:
    def __init__(self, broker_url: str) -> None:
        from celery import Celery

        self.app = Celery("onsei-test-events", broker=broker_url)
        self.events: list[dict[str, Any]] = []
        self._stop = threading.Event()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, name="task-events", daemon=True)
        self._recv: Any = None

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                with self.app.connection() as conn:
                    recv = self.app.events.Receiver(conn, handlers={"*": self.events.append})
                    self._recv = recv
                    self._ready.set()
                    # one subscription for the whole test, stopped by should_stop: a capture
                    # per timeout left and joined the broker's fanout each time, and an event
                    # sent between the two (a task's failure) was lost
                    recv.capture(limit=None, timeout=None, wakeup=False)
            except Exception:  # noqa: BLE001 - the broker is away: try again
                self._ready.set()
                time.sleep(0.5)

    def __enter__(self) -> TaskEvents:  # noqa: PYI034
        self._thread.start()
        self._ready.wait(10)
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._recv is not None:
            self._recv.should_stop = True  # its capture ends within a second
        self._thread.join(5)

    def of_type(self, kind: str) -> list[dict[str, Any]]:
        return [e for e in list(self.events) if e.get("type") == kind]

    def wait(self, pred: Callable[[], bool], timeout: float) -> bool:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if pred():
                return True
            time.sleep(0.2)
        return pred()
