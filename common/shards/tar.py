"""WebDataset tar shards: read as samples, write whole.

Conventions are WebDataset's (``webdataset.tariterators``): a member ``dir/abc.flac`` belongs to
key ``dir/abc`` with extension ``flac`` (split at the first dot of the basename), consecutive
members with one key form one sample, ``__*__`` meta members are skipped. Tests check that
webdataset's own reader and writer agree with ours.

Why we do not call webdataset at run time: ``import webdataset`` imports torch (~3 s, and the ASR
worker must not load torch), and its reader (``tar_file_iterator``) silently drops links,
devices and other non-regular members and cannot report a bad member on its own. So reading is
one forward pass of :mod:`tarfile` (never extracting anything to disk, never by member name):
a member that is unsafe (absolute path, ``..``, link, device), too large, badly named or a
duplicate becomes a :class:`MemberError` and the rest of the shard goes on. A shard that is
not a tar, truncated, or corrupt part-way raises ONE :class:`ShardError`.
"""

from __future__ import annotations

import io
import os
import re
import tarfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from types import TracebackType
from typing import BinaryIO, Self

from common.display import has_control, visible
from common.shards.slice import MemberSlice

_BLOCK = tarfile.BLOCKSIZE
# Compressed shards (.tar.gz etc.) can only be read through tarfile's stream layer.
_COMPRESSED_MAGIC = (b"\x1f\x8b", b"BZh", b"\xfd7zXZ\x00")
_DRIVE = re.compile(r"^[A-Za-z]:[\\/]")
_META = re.compile(r"__[^/]*__($|/)")  # webdataset's skip_meta


class ShardError(RuntimeError):
    """The shard as a whole cannot be read (not a tar, truncated, corrupt, unreadable)."""


@dataclass
class Sample:
    key: str
    # extension (no dot) -> its bytes, or where they lie in a plain tar (a large member)
    files: dict[str, bytes | MemberSlice] = field(default_factory=dict)


@dataclass
class MemberError:
    """One bad member. ``key`` is None when the name itself is unsafe (never trust it)."""

    key: str | None
    name: str
    reason: str


def split_member_name(name: str) -> tuple[str, str]:
    """WebDataset convention: key = path up to the first dot of the basename, ext = the rest."""
    parent, _, base = name.rpartition("/")
    stem, dot, ext = base.partition(".")
    if not dot:
        return name, ""
    return (f"{parent}/{stem}" if parent else stem), ext.lower()


def printable_name(name: str) -> str:
    """A member name safe to log / put in JSON (undecodable bytes shown as \\xNN, control
    characters as their escapes)."""
    return visible(name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace"))


def unsafe_reason(member: tarfile.TarInfo) -> str | None:
    """Why a member must never be trusted, or None. Checked before anything else."""
    name = member.name
    if member.issym() or member.islnk():
        return "unsafe_member:link"
    if member.isdev():  # chr, blk, fifo
        return "unsafe_member:device"
    if not (member.isfile() or member.isdir()):
        return "unsafe_member:not_a_regular_file"
    if name.startswith("/") or _DRIVE.match(name):
        return "unsafe_member:absolute_path"
    if ".." in PurePosixPath(name.replace("\\", "/")).parts:
        return "unsafe_member:parent_traversal"
    if "\x00" in name:
        return "unsafe_member:nul_in_name"
    if has_control(name):  # a tab or newline would be markup in every file and screen after
        return "unsafe_member:control_character_in_name"
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:  # surrogate-escaped bytes: the name is not UTF-8
        return "unsafe_member:non_utf8_name"
    return None


def _open(path: Path) -> tuple[BinaryIO, tarfile.TarFile, bool]:
    """Open ``path`` as a tar; returns (raw file, tar, random_access)."""
    try:
        f = open(path, "rb")  # noqa: SIM115 - closed by iter_shard
    except OSError as e:
        raise ShardError(f"cannot open shard {path}: {e}") from e
    try:
        head = f.read(6)
        f.seek(0)
        if not head:
            raise ShardError(f"not a tar shard (empty file): {path}")
        # Plain tars (the norm) are read from a real file so that a member's bytes come in one
        # read() instead of tarfile's stream layer re-joining 10 KiB blocks.
        random_access = not head.startswith(_COMPRESSED_MAGIC)
        # closed with f by iter_shard
        tf = (tarfile.open(fileobj=f, mode="r:", encoding="utf-8",  # noqa: SIM115
                           errors="surrogateescape") if random_access else
              tarfile.open(fileobj=f, mode="r|*", encoding="utf-8",  # noqa: SIM115
                           errors="surrogateescape"))
        return f, tf, random_access
    except ShardError:
        f.close()
        raise
    except (tarfile.TarError, OSError, EOFError, ValueError) as e:
        f.close()
        raise ShardError(f"not a readable tar shard: {path}: {e}") from e


def iter_shard(
    path: str | Path,
    max_member_bytes: int | None = None,
    *,
    max_sidecar_bytes: int | None = None,
    leave_from: int | None = None,
) -> Iterator[Sample | MemberError]:
    """Yield samples grouped by key (consecutive members) and errors for bad members.

    A key's member errors are yielded before its sample. :class:`ShardError` comes at the point
    of damage, after the samples before it: a caller treats the whole shard as failed.
    ``max_member_bytes`` bounds every member; ``max_sidecar_bytes`` bounds ``.json``/``.txt``
    members (read whole into memory). ``leave_from``: a member of a plain tar this large or
    larger (never a ``.json``/``.txt``) is not read but given as a :class:`MemberSlice`.
    """
    path = Path(path)
    f, tf, random_access = _open(path)
    current: Sample | None = None
    seen: set[str] = set()
    try:
        while True:
            member = tf.next()
            # tarfile keeps every header otherwise: unbounded for huge shards (``members`` is
            # TarFile's own list, missing from typeshed's stub)
            tf.members = []  # type: ignore[attr-defined]
            if member is None:
                break
            if member.isdir():
                continue
            reason = unsafe_reason(member)
            if reason is not None:
                yield MemberError(None, printable_name(member.name), reason)
                continue
            name = member.name
            if _META.match(name):
                continue
            key, ext = split_member_name(name)
            if not ext or not PurePosixPath(key).name:
                yield MemberError(None, name, "bad_name:no_key_or_extension")
                continue
            if current is None or current.key != key:
                if current is not None and current.files:
                    yield current
                current = None
                if key not in seen:  # else: the key came back after another one
                    seen.add(key)
                    current = Sample(key=key)
            if current is None:  # a key that already appeared earlier in the shard
                yield MemberError(key, name, "duplicate_key")
                continue
            limit = max_member_bytes
            if max_sidecar_bytes is not None and ext in ("json", "txt"):
                limit = max_sidecar_bytes if limit is None else min(limit, max_sidecar_bytes)
            if limit is not None and member.size > limit:
                yield MemberError(key, name, f"member_too_large:{member.size}>{limit}")
                continue
            if ext in current.files:
                yield MemberError(key, name, "duplicate_member")
                continue
            data: bytes | MemberSlice
            if (random_access and member.sparse is None and leave_from is not None
                    and member.size >= leave_from and ext not in ("json", "txt")):
                data = MemberSlice(path, member.offset_data, member.size)
                got = max(0, min(member.size, os.fstat(f.fileno()).st_size - member.offset_data))
            else:
                data = _read_member(f, tf, member, random_access)
                got = len(data)
            if got != member.size:
                raise ShardError(
                    f"truncated shard {path}: member {name!r} has {got} of {member.size}"
                    " bytes"
                )
            current.files[ext] = data
        if random_access:
            _check_end(f, tf.offset, path)
    except ShardError:
        raise
    except (tarfile.TarError, EOFError, OSError, ValueError) as e:
        raise ShardError(f"truncated or corrupt shard {path}: {e}") from e
    finally:
        f.close()
    if current is not None and current.files:  # a key whose members all failed: errors only
        yield current


def _read_member(f: BinaryIO, tf: tarfile.TarFile, member: tarfile.TarInfo,
                 random_access: bool) -> bytes:
    if random_access and member.sparse is None:
        f.seek(member.offset_data)
        return f.read(member.size)
    ex = tf.extractfile(member)
    return ex.read() if ex is not None else b""


def _check_end(f: BinaryIO, offset: int, path: Path) -> None:
    """tarfile ends quietly on a bad header or at EOF after the first member; a sound tar has
    an end-of-archive (zero) block where the headers stop."""
    f.seek(offset)
    block = f.read(_BLOCK)
    if len(block) < _BLOCK:
        raise ShardError(f"truncated shard {path}: no end-of-archive block at offset {offset}")
    if block.count(0) != _BLOCK:
        raise ShardError(f"corrupt shard {path}: invalid tar header at offset {offset}")


def check_key(key: str) -> None:
    """A key a WebDataset reader splits back the same way, and that is safe as a path."""
    if not key or "." in PurePosixPath(key).name or key.startswith("/") or "\x00" in key:
        raise ValueError(f"bad shard key {key!r}: non-empty, no dot in the basename, relative")
    if ".." in PurePosixPath(key).parts:
        raise ValueError(f"bad shard key {key!r}: '..' is not allowed")


class ShardWriter:
    """Write a tar to a temp name beside ``path``; rename into place on success only.

    PAX format (long and non-ASCII names), one member per ``key.ext``, like webdataset's
    ``TarWriter`` with ``encoder=False``.
    """

    def __init__(self, path: str | Path, *, mtime: float | None = None) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._tmp = self.path.with_name(f".{self.path.name}.{uuid.uuid4().hex}.part")
        self._tar = tarfile.open(  # noqa: SIM115 - closed by close() / abort()
            self._tmp, mode="w", format=tarfile.PAX_FORMAT, encoding="utf-8")
        self._mtime = mtime
        self.count = 0  # samples written

    @property
    def size(self) -> int:
        """Bytes written so far (headers and padding included)."""
        return self._tar.offset

    def _info(self, key: str, ext: str, size: int, mtime: float | None) -> tarfile.TarInfo:
        if not ext or "/" in ext:
            raise ValueError(f"bad extension {ext!r} for key {key!r}")
        info = tarfile.TarInfo(f"{key}.{ext}")
        info.size = size
        info.mtime = int(mtime if mtime is not None else (self._mtime or time.time()))
        info.mode = 0o644
        return info

    def write(self, key: str, files: dict[str, bytes]) -> None:
        """One sample: ``{ext: bytes}`` written as ``key.ext`` members."""
        check_key(key)
        for ext, data in files.items():
            self._tar.addfile(self._info(key, ext, len(data), None), io.BytesIO(data))
        self.count += 1

    def write_files(self, key: str, files: dict[str, Path | bytes]) -> None:
        """Like :meth:`write`, but paths are streamed from disk instead of held in memory."""
        check_key(key)
        for ext, src in files.items():
            if isinstance(src, bytes):
                self._tar.addfile(self._info(key, ext, len(src), None), io.BytesIO(src))
                continue
            st = os.stat(src)
            with open(src, "rb") as fh:
                self._tar.addfile(self._info(key, ext, st.st_size, st.st_mtime), fh)
        self.count += 1

    def close(self) -> None:
        self._tar.close()
        os.replace(self._tmp, self.path)

    def abort(self) -> None:
        self._tar.close()
        self._tmp.unlink(missing_ok=True)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()
