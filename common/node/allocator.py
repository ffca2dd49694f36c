"""The C allocator's policy for a stage process: large buffers mapped, or kept in one heap.

glibc's malloc serves a request above ``M_MMAP_THRESHOLD`` with a mapping of its own, handed back
to the system when freed; below it, from the arena of the calling thread, which keeps what was
freed for later requests. The threshold starts at 128 KiB but rises to the size of any mapped
block that is freed (up to 32 MiB), so after the first segments every audio buffer, model
activation and spectrogram of a few MB comes from the arenas. A stage's threads (reader, model,
writer, helpers) each keep an arena, and a long member's varied sizes fragment them: the
process's peak grew with the member, not with what it held (docs/operations.md, "With the real
models"). A fixed threshold (which also ends the rise) keeps the buffers that come and go out
of the arenas. Set once per process, before the models load; what the operator gave glibc
(``MALLOC_MMAP_THRESHOLD_`` and the like) is left as it is, and another C library is left alone.

The fixed threshold is dear where buffers come and go at a steady rate: each mapped buffer is
handed back when freed and comes again as fresh zeroed pages, a page fault per 4 KiB. asr, which
frees and maps its windows' features, encoder output and decoder state per window, spent a third
of its wall in page faults with it (docs/asr.md, "Allocator"), so the policy is per stage
(its spec's ``mmap_threshold_kb``): only enhance, whose flat memory on long members needs it,
maps its large buffers; tokenize keeps glibc's own rising threshold.

glibc's own threshold stops rising at 32 MiB, and a thread's heap holds at most 64 MiB and is
trimmed once its free top passes the trim threshold, so the largest buffers are mapped afresh
whatever the threshold: Whisper's encoder asks for 72 MB of attention scores in each of its
layers (8 heads x 1500 x 1500 floats) from the model's thread, 105k page faults per 30 s window
and a third of the encoder's CPU. :data:`ONE_HEAP` (asr's) serves every thread from one heap that
maps nothing on its own and keeps up to :data:`KEPT_TOP_MB` free at its top, so those buffers
come back without a fault (docs/asr.md, "Choosing decoding and the allocator").

What the arenas still keep after a burst (an annotation batch's activations, many blocks under
the threshold) :func:`give_back` returns to the system: a stage calls it after such a burst.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager

log = logging.getLogger(__name__)

M_TRIM_THRESHOLD, M_MMAP_MAX, M_MMAP_THRESHOLD, M_ARENA_MAX = -1, -4, -3, -8  # glibc's malloc.h
# glibc's own threshold rises up to this (64-bit DEFAULT_MMAP_THRESHOLD_MAX): what a stage that
# keeps the default gets back after a stage of the same process fixed a lower one
GLIBC_MAX_THRESHOLD_KB = 32 * 1024
# glibc's defaults, given back when a stage of the same process leaves ONE_HEAP
DEFAULT_TRIM_THRESHOLD = 128 * 1024
DEFAULT_MMAP_MAX = 65536
# a threshold (a stage's, or the setting's for every stage) meaning: no buffer mapped on its own,
# every thread on one heap (a thread's own heap cannot hold a buffer over 64 MiB), up to
# KEPT_TOP_MB of free memory kept at its top for the next window
ONE_HEAP = -2
KEPT_TOP_MB = 128


def stage_threshold_kb(stage_kb: int, setting_kb: int) -> int:
    """The threshold for a stage: the setting when it is given (-1: not given), else the
    stage's own (its spec's ``mmap_threshold_kb``: 0, the allocator's default; > 0, a fixed
    threshold; :data:`ONE_HEAP`)."""
    return setting_kb if setting_kb != -1 else stage_kb


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
        "fordblks", "keepcost")]


def _glibc() -> ctypes.CDLL | None:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    except OSError:
        return None
    # both are glibc's; another C library (musl, macOS) is left as it is
    if not (hasattr(libc, "mallopt") and hasattr(libc, "malloc_trim")):
        return None
    libc.mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    libc.mallopt.restype = ctypes.c_int
    if hasattr(libc, "mallinfo2"):  # glibc 2.33 and later
        libc.mallinfo2.restype = _MallInfo2
    return libc


_LIBC = _glibc()


_fixed = False  # whether this process fixed a threshold (a later stage may want the default)
_one_heap = False  # whether this process took ONE_HEAP (a later stage may want mappings back)
_loading = False  # inside loading(): the outermost one restores the heap


def _operator_set() -> bool:
    """Whether the operator gave glibc's malloc settings of its own (they are left as they are)."""
    mapping = "MALLOC_MMAP_THRESHOLD_" in os.environ or "MALLOC_MMAP_MAX_" in os.environ
    heap = "MALLOC_TRIM_THRESHOLD_" in os.environ or "MALLOC_ARENA_MAX" in os.environ
    return mapping or heap or "glibc.malloc." in os.environ.get("GLIBC_TUNABLES", "")


def map_large_buffers(threshold_kb: int) -> bool:
    """Serve allocations of ``threshold_kb`` KiB and more with their own mappings (0: leave the
    allocator as it is, or, when an earlier stage of this process fixed a threshold, raise it to
    the top of glibc's own range; :data:`ONE_HEAP`: :func:`one_heap`). Returns whether the
    policy was set."""
    global _fixed, _one_heap
    if _operator_set() or _LIBC is None:
        return False
    if threshold_kb == ONE_HEAP:
        return one_heap()
    if _one_heap:  # an earlier stage of this process kept everything in one heap
        _LIBC.mallopt(M_MMAP_MAX, DEFAULT_MMAP_MAX)
        _LIBC.mallopt(M_TRIM_THRESHOLD, DEFAULT_TRIM_THRESHOLD)
        _LIBC.mallopt(M_ARENA_MAX, 8 * (os.cpu_count() or 1))  # glibc's limit on 64-bit
        _one_heap = False
        if threshold_kb <= 0:
            threshold_kb = GLIBC_MAX_THRESHOLD_KB
    if threshold_kb <= 0:
        if not _fixed:
            return False
        threshold_kb = GLIBC_MAX_THRESHOLD_KB
    done = bool(_LIBC.mallopt(M_MMAP_THRESHOLD, threshold_kb * 1024))
    _fixed = _fixed or done
    if done:
        log.debug("buffers of %d KiB and more are mapped on their own", threshold_kb)
    return done


def one_heap() -> bool:
    """Every thread's buffers from one heap, none mapped on its own, up to :data:`KEPT_TOP_MB`
    free kept at its top: a buffer freed and asked for again (a window's activations) comes
    back without page faults. Threads started before keep their own heaps: set it before the
    model loads. Returns whether the policy was set."""
    global _one_heap
    if _operator_set() or _LIBC is None:
        return False
    done = all([_LIBC.mallopt(M_ARENA_MAX, 1), _LIBC.mallopt(M_MMAP_MAX, 0),
                _LIBC.mallopt(M_TRIM_THRESHOLD, KEPT_TOP_MB << 20)])
    _one_heap = _one_heap or done
    if done:
        log.debug("buffers kept in one heap, none mapped on its own")
    return done


@contextmanager
def loading() -> Iterator[None]:
    """Models loaded with their large buffers mapped, even in :data:`ONE_HEAP`: a model file is
    read whole and converted (145 MB for Whisper base), and in one heap those buffers stayed as
    its free memory (Whisper base's RSS 419 MB loaded so, 278 MB mapped). The weights keep their
    mappings; what comes after (the windows' buffers) is kept in the heap as before. Nests (a
    stage's own load inside the engine's)."""
    global _loading
    if not _one_heap or _LIBC is None or _loading:
        yield
        return
    _loading = True
    _LIBC.mallopt(M_MMAP_MAX, DEFAULT_MMAP_MAX)
    try:
        yield
    finally:
        _loading = False
        _LIBC.mallopt(M_MMAP_MAX, 0)
        give_back()


def free_bytes() -> int | None:
    """Bytes free in the heaps (glibc's ``mallinfo2``, 2.33 and later; None elsewhere)."""
    info = getattr(_LIBC, "mallinfo2", None)
    return None if info is None else int(info().fordblks)


def give_back(over_mb: int = 0) -> None:
    """Return the free pages of every thread's heap to the system (glibc's ``malloc_trim``; a
    few milliseconds; elsewhere nothing). ``over_mb``: only when the heaps hold more than that
    free (what is kept is faulted in again when used; where it cannot be told, always)."""
    if _LIBC is None:
        return
    free = free_bytes() if over_mb else None
    if free is None or free > over_mb << 20:
        _LIBC.malloc_trim(0)
