"""A long member's decoded samples on scratch disk, read back a range at a time.

A stage that needs random access to a whole member (asr: VAD over it, then encoder windows and
word snapping anywhere in it) would hold it all: a 3-hour member is 690 MB of float32 at
16 kHz. :class:`SpooledSamples` is a 1-D float32 array over an unnamed scratch file (mapped
read-only): slicing it copies the range into memory and hands the mapped pages back at once
(``MADV_DONTNEED``), so what the process holds is the ranges in use, not the member. It is an
``ndarray``, so code written for an in-memory member takes it unchanged; whole-array
operations (``np.isfinite(a).all()``) work too but map every page: go through slices.
"""

from __future__ import annotations

import mmap
import tempfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import IO, Any

import numpy as np

_PAGE = mmap.PAGESIZE
STEP = 1 << 20  # samples (4 MiB) read at a time by whole-member passes (:func:`ranges`)


class SpooledSamples(np.ndarray):
    """Float32 samples mapped from a scratch file; a slice is a copy in memory."""

    _map: mmap.mmap | None
    _dir: Path | None  # where its scratch file is: what is derived from it is spooled there

    @classmethod
    def of(cls, file: IO[bytes], size: int, directory: Path | None = None) -> SpooledSamples:
        """The first ``size`` float32 samples of ``file`` (its mapping outlives the file
        object: an unnamed file's space is freed when the array is)."""
        file.flush()
        mm = mmap.mmap(file.fileno(), size * 4, access=mmap.ACCESS_READ)
        out = np.ndarray.__new__(cls, (size,), dtype=np.float32, buffer=mm)
        out._map, out._dir = mm, directory
        return out

    def __array_finalize__(self, obj: Any) -> None:
        self._map = getattr(obj, "_map", None)
        self._dir = getattr(obj, "_dir", None)

    def __getitem__(self, key: Any) -> Any:
        if not isinstance(key, slice) or key.step not in (None, 1) or self._map is None:
            return super().__getitem__(key)
        start, stop, _ = key.indices(self.shape[0])
        out = np.array(np.ndarray.__getitem__(self, key))  # a plain copy, not a view of the map
        if stop > start:  # the pages read leave this process (the page cache keeps them)
            lo = (start * 4) // _PAGE * _PAGE
            self._map.madvise(mmap.MADV_DONTNEED, lo, stop * 4 - lo)
        return out


class Spool:
    """Samples appended to an unnamed file in ``directory``; :meth:`samples` maps them."""

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        # closed by samples() or close(): it outlives this call
        self._file: IO[bytes] | None = tempfile.TemporaryFile(dir=directory)  # noqa: SIM115
        self.size = 0

    def append(self, chunk: np.ndarray) -> None:
        assert self._file is not None, "samples() was called: the spool is closed"
        self._file.write(np.ascontiguousarray(chunk, dtype=np.float32).tobytes())
        self.size += chunk.size

    def samples(self) -> np.ndarray:
        """The samples written, mapped (an empty in-memory array when none); closes the file."""
        assert self._file is not None
        try:
            if self.size == 0:
                return np.zeros(0, dtype=np.float32)
            return SpooledSamples.of(self._file, self.size, self.directory)
        finally:
            self.close()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


def ranges(samples: np.ndarray, step: int = STEP) -> Iterator[np.ndarray]:
    """``samples`` a range at a time: a pass over a whole spooled member (its peak, a check of
    every sample) reads and hands back its pages range by range, where a whole-array operation
    would hold them all at once (a 60-min member: 230 MB)."""
    for i in range(0, samples.size, step):
        yield samples[i:i + step]


def mapped(samples: np.ndarray, fn: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    """``fn`` (float32 samples in, as many out) over ``samples``, a range at a time when they
    are spooled; the result held as they are (:func:`joined`)."""
    if not isinstance(samples, SpooledSamples):
        return fn(samples)
    return joined(samples, (fn(r) for r in ranges(samples)))


def joined(like: np.ndarray, parts: Iterable[np.ndarray]) -> np.ndarray:
    """``parts`` joined into one float32 array held as ``like`` is: spooled beside it, a part at
    a time, when ``like`` is a spooled member (what is derived from a long member is as long),
    else in memory."""
    if not isinstance(like, SpooledSamples) or like._dir is None:
        return np.concatenate([np.asarray(p, np.float32) for p in parts])
    spool = Spool(like._dir)
    try:
        for part in parts:
            spool.append(part)
        return spool.samples()
    finally:
        spool.close()
