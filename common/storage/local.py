"""Local filesystem backend (plain paths and ``file://`` URLs)."""

from __future__ import annotations

import hashlib
import os
import posixpath
import shutil
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path

from common.storage.base import NotFound, StorageError, Store

_EDGE = 1024 * 1024  # bytes hashed at each end of a file for its identity


class LocalStore(Store):
    def __init__(self, root: str | Path, url: str | None = None) -> None:
        self.root = Path(root).expanduser().resolve()
        self.url = url or str(self.root)
        self._root_str = str(self.root)

    def _file(self, key: str) -> str:
        # Lexical, like an S3 key: no symlink resolution (7 lstat calls a key, the main cost of
        # reading 150,000 done records), and a directory symlinked to another disk still works.
        norm = posixpath.normpath(key.replace(os.sep, "/")) if key else "."
        if norm.startswith(("/", "../")) or norm == "..":
            raise StorageError(f"key escapes the store root: {key!r}")
        return self._root_str if norm == "." else os.path.join(self._root_str, norm)

    def _path(self, key: str) -> Path:
        return Path(self._file(key))

    def get_file(self, key: str, dest: Path) -> Path:
        src = self._path(key)
        if not src.is_file():
            raise NotFound(f"not found: {self.child_url(key)}")
        dest = Path(dest)
        _copy_atomic(src, dest)
        return dest

    def put_file(self, src: Path, key: str) -> None:
        dest = self._path(key)
        self._make_dirs(dest.parent)
        _copy_atomic(Path(src), dest)

    def _make_dirs(self, d: Path) -> None:
        try:
            d.mkdir(parents=True, exist_ok=True)
        except (FileExistsError, NotADirectoryError) as e:
            self._check_reachable(d)
            raise StorageError(f"cannot create {d}: {e}") from e

    def exists(self, key: str) -> bool:
        path = self._path(key)
        if path.is_file():
            return True
        self._check_reachable(path.parent)  # absent, or behind a link to nowhere?
        return False

    def _check_reachable(self, d: Path) -> None:
        """Raise a clear StorageError when ``d`` (or a folder above it, up to the root) is a
        symlink to nothing or not a folder: such a ``_ledger`` would read as "nothing done" and
        fail every write with a bare FileExistsError."""
        for p in (d, *d.parents):
            if os.path.islink(p) and not p.exists():
                raise StorageError(f"{p} is a symlink to {os.readlink(p)}, which does not exist: "
                                   f"mount or create its target, or remove the link")
            if p.exists() and not p.is_dir():
                raise StorageError(f"{p} is a file where a folder is needed")
            if p == self.root or p.exists():
                return

    def size(self, key: str) -> int:
        try:
            return self._path(key).stat().st_size
        except FileNotFoundError as e:
            raise NotFound(f"not found: {self.child_url(key)}") from e

    def identity(self, key: str) -> str:
        """Size, mtime and a hash of the first and last MiB: a file rewritten with the same
        size and mtime (a copy with ``cp -p``, a restored backup) is another file."""
        try:
            with open(self._file(key), "rb") as f:
                st = os.fstat(f.fileno())
                h = hashlib.sha256(f.read(_EDGE))
                if st.st_size > _EDGE:
                    f.seek(max(_EDGE, st.st_size - _EDGE))
                    h.update(f.read(_EDGE))
        except FileNotFoundError as e:
            raise NotFound(f"not found: {self.child_url(key)}") from e
        return f"{st.st_size}:{st.st_mtime_ns}:{h.hexdigest()[:16]}"

    def list_tagged(self, prefix: str = "") -> Iterator[tuple[str, str]]:
        out = []
        for key, entry in self._walk(prefix):
            try:
                st = entry.stat()
            except FileNotFoundError:
                continue  # deleted since the walk
            out.append((key, f"{st.st_ino}:{st.st_mtime_ns}:{st.st_size}"))  # rewrite: new inode
        return iter(out)

    def list(self, prefix: str = "") -> Iterator[str]:
        return iter([key for key, _ in self._walk(prefix)])

    def _walk(self, prefix: str) -> Sequence[tuple[str, os.DirEntry[str]]]:
        """(key, dir entry) of the files under ``prefix``, sorted by key. Walks only the
        deepest directory the prefix names, not the whole root."""
        base_dir = prefix.rsplit("/", 1)[0] if "/" in prefix else ""
        start = self._path(base_dir) if base_dir else self.root
        if not start.is_dir():
            self._check_reachable(start)
            return []
        found = []
        todo = [(str(start), os.path.relpath(start, self.root).replace(os.sep, "/"))]
        while todo:  # one relpath per directory, not per file: 50,000 records in one dir
            path, rel_dir = todo.pop()
            head = "" if rel_dir == "." else rel_dir + "/"
            with os.scandir(path) as it:
                for entry in it:
                    rel = head + entry.name
                    if entry.is_dir(follow_symlinks=False):
                        todo.append((entry.path, rel))
                    elif entry.name.startswith(".") and entry.name.endswith(".part"):
                        continue  # in-flight temp files are not objects
                    elif rel.startswith(prefix) and entry.is_file():
                        found.append((rel, entry))
        found.sort(key=lambda x: x[0])
        return found

    def read_bytes(self, key: str) -> bytes:
        try:
            with open(self._file(key), "rb") as f:  # no Path: 150,000 records in a status
                return f.read()
        except FileNotFoundError as e:
            raise NotFound(f"not found: {self.child_url(key)}") from e

    def write_bytes(self, key: str, data: bytes) -> None:
        dest = self._path(key)
        self._make_dirs(dest.parent)
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
