"""A tar member left in its shard file: read by the decoder a block at a time, never held whole.

A 3-hour podcast is ~65 MB of opus; held as ``bytes`` while it decodes, it is memory a
2-minute member does not cost. A plain (uncompressed) tar keeps each member's bytes contiguous
at a known offset, so a large member can stay on disk and be read through a window over the
file; a compressed shard has no offsets and keeps its members in memory.
"""

from __future__ import annotations

import io
import os
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class MemberSlice:
    """``size`` bytes of ``path`` from ``offset``: one member of a plain tar."""

    path: Path
    offset: int
    size: int

    def __len__(self) -> int:
        return self.size

    def open(self) -> io.BufferedReader:
        """A seekable reader over the member alone (offsets relative to its start)."""
        return io.BufferedReader(_Window(self), buffer_size=1 << 16)

    def read(self) -> bytes:
        """The whole member (for callers that need its bytes)."""
        with self.open() as f:
            return f.read()


class _Window(io.RawIOBase):
    """Reads ``[offset, offset + size)`` of the file; seeks are clamped to it."""

    def __init__(self, part: MemberSlice) -> None:
        super().__init__()
        self._fd = os.open(part.path, os.O_RDONLY)
        self._start, self._size, self._pos = part.offset, part.size, 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        n = max(0, min(len(buffer), self._size - self._pos))
        if n == 0:
            return 0
        data = os.pread(self._fd, n, self._start + self._pos)
        buffer[:len(data)] = data
        self._pos += len(data)
        return len(data)

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self._size}[whence]
        self._pos = min(max(0, base + offset), self._size)
        return self._pos

    def tell(self) -> int:
        return self._pos

    def close(self) -> None:
        if not self.closed:
            os.close(self._fd)
        super().close()
