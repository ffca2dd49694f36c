"""A shard's files transcribed a few at a time, their outcomes handed on in shard order.

On a CPU the beam search runs on the one-thread decoder replica (services/whisper/model.py) and
the encoder, language ID and word alignment on the other replica's threads: one file at a time
left a core idle while its beam search ran (on the held quick set, generate was 15 of the
stage's 28 s of wall). With two files in flight the next file's VAD, language ID and encoder
run beside this file's beam search. CTranslate2 releases the GIL in its calls and each replica
serves one call at a time. The decoder holds a one-thread replica per file in flight (they share
its weights): with one, two files' beam searches queued for its thread while the encoder's
cores sat idle (held quick, 3 rounds against the peer in one run: wall 0.938x -> 0.799x, CPU
0.864x -> 0.800x, peak 918 -> 958 MB, the same texts). Each thread has its own transcriber (its
pipeline's proxy holds the rows of the call in progress). A file that ends while an earlier,
longer one still runs makes room for the next at once: waiting for files in their order had
left one core idle behind every long file (held quick, 3 rounds, the same code otherwise:
23.5 -> 20.9 s wall, the same CPU and texts).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import TypeVar, cast

T = TypeVar("T")
R = TypeVar("R")

# outcomes held for their turn while an earlier file runs; each holds its decoded member (at
# most 38 MB: longer ones are spooled, services/asr/decode_ahead.py)
WAITING = 4
_END = object()


def files_in_flight(setting: int, device: str, separating: bool) -> int:
    """The setting when given (> 0); else two on a CPU, one on a GPU (not measured there) or
    with a music separation model (its thread safety is its own)."""
    if setting > 0:
        return setting
    return 1 if separating or not device.startswith("cpu") else 2


def in_order(items: Iterator[T], work: Callable[[T], R], depth: int,
             waiting: int = WAITING) -> Iterator[tuple[T, R]]:
    """``(item, work(item))`` for each of ``items`` in their order, with up to ``depth`` calls
    of ``work`` running at once (1: each in turn, on the calling thread). A call that ends
    while an earlier one still runs makes room for the next item at once, up to ``waiting``
    outcomes held for their turn (a long file does not hold the files after it back). A
    call's exception is raised where its outcome is due; the calls not yet started are then
    cancelled."""
    if depth <= 1:
        for item in items:
            yield item, work(item)
        return
    with ThreadPoolExecutor(max_workers=depth, thread_name_prefix="asr-file") as pool:
        pending: deque[tuple[T, Future[R]]] = deque()
        more = True
        try:
            while True:
                while more and len(pending) < depth + waiting and \
                        sum(not f.done() for _, f in pending) < depth:
                    got = next(items, _END)
                    if got is _END:
                        more = False
                    else:
                        item = cast(T, got)
                        pending.append((item, pool.submit(work, item)))
                if not pending:
                    return
                if not pending[0][1].done():
                    wait([f for _, f in pending if not f.done()], return_when=FIRST_COMPLETED)
                    continue
                first, fut = pending.popleft()
                yield first, fut.result()
        finally:
            for _, fut in pending:
                fut.cancel()
