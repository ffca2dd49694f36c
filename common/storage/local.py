"""Local filesystem backend (plain paths and ``file://`` URLs)."""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

from common.storage.base import NotFound, StorageError, Store


class LocalStore(Store):
    def __init__(self, root: str | Path, url: str | None = None) -> None:
        self.root = Path(root).expanduser().resolve()
        self.url = url or str(self.root)

    def _path(self, key: str) -> Path:
        p = (self.root / key).resolve()
        if p != self.root and self.root not in p.parents:
            raise StorageError(f"key escapes the store root: {key!r}")
        return p

    def get_file(self, key: str, dest: Path) -> Path:
        src = self._path(key)
        if not src.is_file():
            raise NotFound(f"not found: {self.child_url(key)}")
        dest = Path(dest)
        _copy_atomic(src, dest)
        return dest

    def put_file(self, src: Path, key: str) -> None:
        _copy_atomic(Path(src), self._path(key))

    def exists(self, key: str) -> bool:
        return self._path(key).is_file()

    def size(self, key: str) -> int:
        try:
            return self._path(key).stat().st_size
        except FileNotFoundError as e:
            raise NotFound(f"not found: {self.child_url(key)}") from e

    def identity(self, key: str) -> str:
        try:
            st = self._path(key).stat()
        except FileNotFoundError as e:
            raise NotFound(f"not found: {self.child_url(key)}") from e
        return f"{st.st_size}:{st.st_mtime_ns}"

    def list(self, prefix: str = "") -> Iterator[str]:
        # Walk only the deepest directory the prefix names, not the whole root.
        base_dir = prefix.rsplit("/", 1)[0] if "/" in prefix else ""
        start = self._path(base_dir) if base_dir else self.root
        if not start.is_dir():
            return iter(())
        keys = []
        for dirpath, _dirs, files in os.walk(start):
            for f in files:
                if f.startswith(".") and f.endswith(".part"):
                    continue  # in-flight temp files are not objects
                rel = os.path.relpath(os.path.join(dirpath, f), self.root).replace(os.sep, "/")
                if rel.startswith(prefix):
                    keys.append(rel)
        return iter(sorted(keys))

    def read_bytes(self, key: str) -> bytes:
        try:
            return self._path(key).read_bytes()
        except FileNotFoundError as e:
            raise NotFound(f"not found: {self.child_url(key)}") from e

    def write_bytes(self, key: str, data: bytes) -> None:
        dest = self._path(key)
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp = dest.with_name(f".{dest.name}.{uuid.uuid4().hex}.part")
        try:
            with open(tmp, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, dest)
        finally:
            tmp.unlink(missing_ok=True)

    def delete(self, key: str) -> None:
        self._path(key).unlink(missing_ok=True)


def _copy_atomic(src: Path, dest: Path) -> None:
    """Copy under a temp name beside ``dest``, then rename: readers never see a partial file."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(f".{dest.name}.{uuid.uuid4().hex}.part")
    try:
        shutil.copyfile(src, tmp)
        os.replace(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)
