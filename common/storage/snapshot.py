"""A read-only view of a store that reads each object at most once.

One report over several readers of the same small object (``onsei status``: the corpus step's
coverage and dedup's own figures both read ``dedup/summary.json``) then costs one GET, and both
see the same version of it. Writes are refused: the view is for one read pass.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from common.storage.base import NotFound, StorageError, Store


class ReadOnce(Store):
    def __init__(self, inner: Store) -> None:
        self._inner = inner
        self.url = inner.url
        self.parallel_reads = inner.parallel_reads
        self._read: dict[str, bytes | NotFound] = {}

    def read_bytes(self, key: str) -> bytes:
        if key not in self._read:
            try:
                self._read[key] = self._inner.read_bytes(key)
            except NotFound as e:  # absent now is absent for the whole pass
                self._read[key] = e
        got = self._read[key]
        if isinstance(got, NotFound):
            raise got
        return got

    def get_file(self, key: str, dest: Path) -> Path:
        return self._inner.get_file(key, dest)

    def exists(self, key: str) -> bool:
        return self._inner.exists(key)

    def size(self, key: str) -> int:
        return self._inner.size(key)

    def list(self, prefix: str = "") -> Iterator[str]:
        return self._inner.list(prefix)

    def list_tagged(self, prefix: str = "") -> Iterator[tuple[str, str]]:
        return self._inner.list_tagged(prefix)

    def identity(self, key: str) -> str:
        return self._inner.identity(key)

    def put_file(self, src: Path, key: str) -> None:
        raise StorageError(f"{self!r} is read-only")

    def write_bytes(self, key: str, data: bytes) -> None:
        raise StorageError(f"{self!r} is read-only")

    def delete(self, key: str) -> None:
        raise StorageError(f"{self!r} is read-only")
