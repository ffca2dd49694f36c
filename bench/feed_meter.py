"""CPU seconds per part of a stage: functions wrapped in place, each call's thread CPU time
(``time.thread_time``) charged to its part, exclusive of the parts called inside it, so the
parts add up. The process total (``getrusage``: every thread, native ones included) less the
parts is what no part names (tar reading glue, JSON, Python between calls).
"""

from __future__ import annotations

import functools
import resource
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any


def process_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


class CpuMeter:
    def __init__(self) -> None:
        self.parts: dict[str, float] = defaultdict(float)
        self._lock = threading.Lock()
        self._local = threading.local()
        self._undo: list[Callable[[], None]] = []

    def _stack(self) -> list[list[float]]:
        if not hasattr(self._local, "stack"):
            self._local.stack = []
        return self._local.stack

    @contextmanager
    def part(self, name: str) -> Iterator[None]:
        stack = self._stack()
        frame = [0.0]  # CPU of the parts called inside this one
        stack.append(frame)
        t0 = time.thread_time()
        try:
            yield
        finally:
            spent = time.thread_time() - t0
            stack.pop()
            if stack:
                stack[-1][0] += spent
            with self._lock:
                self.parts[name] += spent - frame[0]

    def wrap(self, name: str, fn: Callable) -> Callable:
        @functools.wraps(fn)
        def metered(*a: Any, **k: Any) -> Any:
            with self.part(name):
                return fn(*a, **k)
        return metered

    def wrap_iter(self, name: str, fn: Callable[..., Iterator]) -> Callable[..., Iterator]:
        """A generator function whose every step is charged to ``name``."""
        @functools.wraps(fn)
        def metered(*a: Any, **k: Any) -> Iterator:
            it = iter(fn(*a, **k))
            while True:
                with self.part(name):
                    try:
                        item = next(it)
                    except StopIteration:
                        return
                yield item
        return metered

    def patch(self, owner: Any, attr: str, name: str, kind: str = "call") -> None:
        """Replace ``owner.attr`` by its metered self until :meth:`restore`."""
        orig = getattr(owner, attr)
        raw = owner.__dict__.get(attr, orig) if isinstance(owner, type) else orig
        if isinstance(raw, staticmethod):
            raw = raw.__func__
        new = self.wrap_iter(name, raw) if kind == "iter" else self.wrap(name, raw)
        setattr(owner, attr, new)
        self._undo.append(lambda: setattr(owner, attr, orig))

    def restore(self) -> None:
        while self._undo:
            self._undo.pop()()


class MeteredResampleStream:
    """soxr.ResampleStream whose ``resample_chunk`` is charged to a part (decode's own
    streaming resampler is then measured apart from decoding)."""

    def __init__(self, meter: CpuMeter, cls: type, *a: Any, **k: Any) -> None:
        self._inner = cls(*a, **k)
        self._meter = meter

    def resample_chunk(self, *a: Any, **k: Any) -> Any:
        with self._meter.part("resample"):
            return self._inner.resample_chunk(*a, **k)


def meter_resampling(meter: CpuMeter) -> None:
    """Every soxr call (streamed in decoding, whole in writers and annotators) -> ``resample``."""
    import soxr

    stream_cls = soxr.ResampleStream
    meter.patch(soxr, "resample", "resample")
    soxr.ResampleStream = functools.partial(MeteredResampleStream, meter, stream_cls)
    meter._undo.append(lambda: setattr(soxr, "ResampleStream", stream_cls))
