"""WebDataset tar shards: read as samples, write whole.

Reading streams the tar once (no extraction to disk, never by member name). A member that is
unsafe (absolute path, ``..``, link, device), too large, or unreadable becomes a
:class:`MemberError` and the rest of the shard goes on. A truncated or non-tar shard raises
one :class:`ShardError`.
"""

from __future__ import annotations

import os
import tarfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath


class ShardError(RuntimeError):
    """The shard as a whole cannot be read (not a tar, truncated, unreadable)."""


@dataclass
class Sample:
    key: str
    files: dict[str, bytes] = field(default_factory=dict)  # extension (no dot) -> bytes


@dataclass
class MemberError:
    key: str | None
    name: str
    reason: str


def split_member_name(name: str) -> tuple[str, str]:
    """WebDataset convention: key = path up to the first dot of the basename, ext = the rest."""
    p = PurePosixPath(name)
    base = p.name
    if "." not in base:
        return name, ""
    stem, ext = base.split(".", 1)
    key = str(p.parent / stem) if str(p.parent) not in ("", ".") else stem
    return key, ext.lower()


def unsafe_reason(member: tarfile.TarInfo) -> str | None:
    name = member.name
    if member.issym() or member.islnk():
        return "unsafe_member:link"
    if member.isdev() or member.isfifo() or member.ischr() or member.isblk():
        return "unsafe_member:device"
    if name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        return "unsafe_member:absolute_path"
    if ".." in PurePosixPath(name).parts:
        return "unsafe_member:parent_traversal"
    if "\x00" in name:
        return "unsafe_member:nul_in_name"
    return None


def iter_shard(path: str | Path, max_member_bytes: int | None = None) -> Iterator[Sample | MemberError]:
    """Yield samples grouped by key (consecutive members), and errors for bad members."""
    try:
        tf = tarfile.open(path, mode="r|*")  # streaming: one pass, bounded memory
    except (tarfile.TarError, OSError, EOFError) as e:
        raise ShardError(f"not a readable tar shard: {path}: {e}") from e
    current: Sample | None = None
    seen_keys: set[str] = set()
    try:
        with tf:
            for member in tf:
                if member.isdir():
                    continue
                reason = unsafe_reason(member)
                key, ext = split_member_name(member.name)
                if reason is None and not member.isfile():
                    reason = "unsafe_member:not_a_regular_file"
                if reason is None and max_member_bytes is not None and member.size > max_member_bytes:
                    reason = f"member_too_large:{member.size}"
                if reason is not None:
                    yield MemberError(key=None if reason.startswith("unsafe") else key,
                                      name=member.name, reason=reason)
                    continue
                if current is None or current.key != key:
                    if current is not None:
                        yield current
                    if key in seen_keys:
                        yield MemberError(key=key, name=member.name, reason="duplicate_key")
                        current = None
                        continue
                    seen_keys.add(key)
                    current = Sample(key=key)
                if current is None:
                    continue
                f = tf.extractfile(member)
                data = f.read() if f is not None else b""
                if len(data) != member.size:
                    raise ShardError(f"truncated shard: member {member.name!r} is short")
                if ext in current.files:
                    yield MemberError(key=key, name=member.name, reason="duplicate_member")
                    continue
                current.files[ext] = data
    except (tarfile.TarError, EOFError, OSError) as e:
        raise ShardError(f"truncated or corrupt shard {path}: {e}") from e
    if current is not None:
        yield current


class ShardWriter:
    """Write a tar to a temp name beside ``path``; rename into place on success only."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._tmp = self.path.with_name(f".{self.path.name}.{uuid.uuid4().hex}.part")
        self._tar = tarfile.open(self._tmp, mode="w", format=tarfile.PAX_FORMAT)
        self.count = 0

    def write(self, key: str, files: dict[str, bytes]) -> None:
        for ext, data in files.items():
            info = tarfile.TarInfo(f"{key}.{ext}")
            info.size = len(data)
            info.mtime = int(time.time())
            info.mode = 0o644
            import io

            self._tar.addfile(info, io.BytesIO(data))
        self.count += 1

    def close(self) -> None:
        self._tar.close()
        os.replace(self._tmp, self.path)

    def abort(self) -> None:
        self._tar.close()
        self._tmp.unlink(missing_ok=True)

    def __enter__(self) -> "ShardWriter":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:  # noqa: ANN001
        if exc_type is None:
            self.close()
        else:
            self.abort()
