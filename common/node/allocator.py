"""The C allocator's policy for a stage process: large buffers are mapped, not kept.

glibc's malloc serves a request above ``M_MMAP_THRESHOLD`` with a mapping of its own, handed back
to the system when freed; below it, from the arena of the calling thread, which keeps what was
freed for later requests. The threshold starts at 128 KiB but rises to the size of any mapped
block that is freed (up to 32 MiB), so after the first segments every audio buffer, model
activation and spectrogram of a few MB comes from the arenas. A stage's threads (reader, model,
writer, helpers) each keep an arena, and a long member's varied sizes fragment them: the
process's peak grew with the member, not with what it held (docs/operations.md, "With the real
models"). A fixed threshold (which also ends the rise) keeps the buffers that come and go out
of the arenas. Set once per process, before the models load; a value the operator gave glibc
(``MALLOC_MMAP_THRESHOLD_``) is left as it is, and another C library is left alone.

The fixed threshold is dear where buffers come and go at a steady rate: each mapped buffer is
handed back when freed and comes again as fresh zeroed pages, a page fault per 4 KiB. asr, which
frees and maps its windows' features, encoder output and decoder state per window, spent a third
of its wall in page faults with it (docs/asr.md, "Allocator"), so the policy is per stage
(its spec's ``mmap_threshold_kb``): only enhance, whose flat memory on long members needs it,
maps its large buffers; asr and tokenize keep glibc's own rising threshold.

What the arenas still keep after a burst (an annotation batch's activations, many blocks under
the threshold) :func:`give_back` returns to the system: a stage calls it after such a burst.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os

log = logging.getLogger(__name__)

M_MMAP_THRESHOLD = -3  # glibc's malloc.h
# glibc's own threshold rises up to this (64-bit DEFAULT_MMAP_THRESHOLD_MAX): what a stage that
# keeps the default gets back after a stage of the same process fixed a lower one
GLIBC_MAX_THRESHOLD_KB = 32 * 1024

def stage_threshold_kb(stage_kb: int, setting_kb: int) -> int:
    """The threshold for a stage: the setting when it is given (>= 0), else the stage's own
    (its spec's ``mmap_threshold_kb``, 0: the allocator's default)."""
    return setting_kb if setting_kb >= 0 else stage_kb


def _glibc() -> ctypes.CDLL | None:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    except OSError:
        return None
    # both are glibc's; another C library (musl, macOS) is left as it is
    return libc if hasattr(libc, "mallopt") and hasattr(libc, "malloc_trim") else None


_LIBC = _glibc()


_fixed = False  # whether this process fixed a threshold (a later stage may want the default)


def map_large_buffers(threshold_kb: int) -> bool:
    """Serve allocations of ``threshold_kb`` KiB and more with their own mappings (0: leave the
    allocator as it is, or, when an earlier stage of this process fixed a threshold, raise it to
    the top of glibc's own range). Returns whether the policy was set."""
    global _fixed
    if "MALLOC_MMAP_THRESHOLD_" in os.environ or _LIBC is None:
        return False
    if threshold_kb <= 0:
        if not _fixed:
            return False
        threshold_kb = GLIBC_MAX_THRESHOLD_KB
    mallopt = _LIBC.mallopt
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    done = bool(mallopt(M_MMAP_THRESHOLD, threshold_kb * 1024))
    _fixed = _fixed or done
    if done:
        log.debug("buffers of %d KiB and more are mapped on their own", threshold_kb)
    return done


def give_back() -> None:
    """Return the free pages of every thread's heap to the system (glibc's ``malloc_trim``; a
    few milliseconds; elsewhere nothing)."""
    if _LIBC is not None:
        _LIBC.malloc_trim(0)
