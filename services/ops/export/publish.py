"""Where an export may go, and publishing it whole.

Every export directory holds a marker, ``.onsei-export.json`` (its id and when it was made),
written when its staging directory is created. An existing ``--to`` is replaced only when it
carries that marker (or is an empty directory): a project directory, the current directory,
the output root or a directory above it, or anything under the ledger is refused before any
work, whatever files it holds.

A local ``--to`` is built in a sibling (``.<name>.partial-<id>``) and swapped in by two
renames: the old export aside (``.<name>.old-<id>``), the new one into place. A process killed
between them leaves no ``--to``; the next export to that path first restores the old one and
removes every leftover sibling that carries the marker. A running export holds an ``flock`` on
its staging directory and on the export it is replacing, so another export never takes them
for leftovers.

On an object store, whose objects are each whole but not together, the marker goes first, the
card (README.md) is removed, the parts are written, stale parts removed, and the card written
last: a prefix without its card is an export in progress (docs/operations.md, "Export").
"""

from __future__ import annotations

import errno
import fcntl
import os
import re
import shutil
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from common.ledger.store import LEDGER
from common.record import Record, RecordError
from common.redact import redact_text
from common.storage import Store, split_url
from services.ops.export.audio import AUDIO_DIR
from services.ops.export.split import SPLITS

CARD = "README.md"
MARKER = ".onsei-export.json"


class ExportTargetError(ValueError):
    """``--to`` cannot receive an export (one line, nothing written)."""


class ExportMarker(Record):
    """``.onsei-export.json``: what makes a directory an export that a later one may replace."""

    export_id: str
    created_at: float


def new_marker() -> ExportMarker:
    return ExportMarker(export_id=uuid.uuid4().hex, created_at=time.time())


def read_marker(directory: Path) -> ExportMarker | None:
    """The marker of ``directory`` (None: not a directory, or no readable marker)."""
    path = directory / MARKER
    if directory.is_symlink() or not directory.is_dir() or not path.is_file():
        return None
    try:
        return ExportMarker.from_json(path.read_bytes()[:4096])
    except (OSError, RecordError):
        return None


def local_path(to: str) -> Path | None:
    """``--to`` as a local directory (absolute, symlinks resolved), or None for an object
    store URL."""
    scheme, _, path = split_url(to)
    return Path(path).expanduser().resolve() if scheme == "file" else None


def _parts(url: str) -> tuple[str, ...]:
    """A location as path components: a local path resolved, an S3 URL as bucket + key parts."""
    scheme, bucket, path = split_url(url)
    if scheme == "s3":
        return ("s3:", bucket, *(p for p in path.split("/") if p))
    return Path(path).expanduser().resolve().parts


def check_target_place(to: str, output_url: str, cwd: Path | None = None) -> None:
    """Refuse a ``--to`` whose replacement would lose what is not an export: the current
    directory or one above it, the output root or one above it, anything under its ledger."""
    dest, out = _parts(to), _parts(output_url)
    here = (cwd or Path.cwd()).resolve().parts
    why = None
    if here[:len(dest)] == dest:
        why = "is the current directory or one above it"
    elif out[:len(dest)] == dest:
        why = f"is the output root {redact_text(output_url)} or one above it"
    elif dest[:len(out) + 1] == (*out, LEDGER):
        why = f"is under the output root's {LEDGER}/"
    if why is not None:
        raise ExportTargetError(f"--to {redact_text(to)} {why}: an export replaces its --to "
                                "whole; choose a directory of its own")


def check_local_target(dest: Path) -> None:
    """An existing local ``--to`` must be an empty directory or an earlier export."""
    if not dest.exists() and not dest.is_symlink():
        return
    if dest.is_dir() and not dest.is_symlink() and (read_marker(dest) is not None
                                                     or not any(dest.iterdir())):
        return
    raise ExportTargetError(f"--to {dest} exists and was not written by onsei export (no "
                            f"{MARKER}): choose another directory")


def check_store_target(store: Store, to: str) -> None:
    """An ``s3://`` ``--to`` must be empty or hold an earlier export's marker."""
    if store.exists(MARKER) or next(iter(store.list("")), None) is None:
        return
    raise ExportTargetError(f"--to {redact_text(to)} holds objects and no {MARKER} (not "
                            "written by onsei export): choose another prefix")


# --- local: stage, swap, recover ---------------------------------------------------------------
def _lock(path: Path) -> int | None:
    """An exclusive ``flock`` on a directory, or None when another process holds one. Where
    the file system has no ``flock`` the directory counts as unlocked (nothing to wait for)."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as e:
        if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
            os.close(fd)
            return None
    return fd


def _remove(directory: Path) -> None:
    """Everything but the marker first, then the marker: a removal cut short still carries it,
    so the next export's recovery finds it."""
    for child in directory.iterdir():
        if child.name == MARKER:
            continue
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child, ignore_errors=True)
        else:
            child.unlink(missing_ok=True)
    shutil.rmtree(directory, ignore_errors=True)


def _siblings(dest: Path, kind: str) -> list[Path]:
    pattern = re.compile(rf"\.{re.escape(dest.name)}\.{kind}-[0-9a-f]{{8,32}}")
    try:
        return sorted(p for p in dest.parent.iterdir() if pattern.fullmatch(p.name))
    except FileNotFoundError:
        return []


def recover(dest: Path) -> list[str]:
    """Undo what a killed export left beside ``dest``: restore the newest earlier export set
    aside when ``dest`` is missing, remove every other leftover that carries the marker and
    that no running export holds. Returns what was done, one line each."""
    done: list[str] = []
    held: list[tuple[Path, ExportMarker, int]] = []
    for p in _siblings(dest, "old") + _siblings(dest, "partial"):
        marker = read_marker(p)
        fd = _lock(p) if marker is not None else None
        if marker is not None and fd is not None:
            held.append((p, marker, fd))
    try:
        olds = sorted((m.created_at, p) for p, m, _ in held if ".old-" in p.name)
        if olds and not dest.exists() and not dest.is_symlink():
            os.rename(olds[-1][1], dest)
            done.append(f"restored {dest} from {olds[-1][1].name}")
        for p, _, _ in held:
            if p.exists():
                _remove(p)
                done.append(f"removed {p.name}")
    finally:
        for _, _, fd in held:
            os.close(fd)
    return done


@contextmanager
def staging(dest: Path | None, scratch: str, marker: ExportMarker) -> Iterator[Path]:
    """Where the export is built, marked, and held for the whole export: beside a local
    ``dest`` (one rename publishes it), else in ``scratch``. Removed on the way out (a local
    one is gone already when published)."""
    parent = dest.parent if dest is not None else Path(scratch)
    parent.mkdir(parents=True, exist_ok=True)
    name = f".{dest.name}.partial-" if dest is not None else "export-"
    built = parent / f"{name}{marker.export_id[:16]}"
    built.mkdir()
    fd = _lock(built)  # held before the marker is there: never taken for a leftover
    try:
        (built / MARKER).write_text(marker.to_json(), encoding="utf-8")
        yield built
    finally:
        if built.exists():  # gone already when published
            _remove(built)
        if fd is not None:
            os.close(fd)


def publish_local(built: Path, dest: Path) -> None:
    """Swap ``built`` into ``dest``: an empty directory is removed, an earlier export set
    aside (held, so a concurrent export's recovery leaves it), then removed."""
    check_local_target(dest)
    if not dest.exists():
        os.rename(built, dest)
        return
    if not any(dest.iterdir()):
        os.rmdir(dest)
        os.rename(built, dest)
        return
    fd = _lock(dest)
    if fd is None:
        raise ExportTargetError(f"--to {dest} is being replaced by another export right now")
    try:
        old = dest.parent / f".{dest.name}.old-{uuid.uuid4().hex[:16]}"
        os.rename(dest, old)
        os.rename(built, dest)
        _remove(old)
    finally:
        os.close(fd)


# --- object store ------------------------------------------------------------------------------
def publish_store(built: Path, store: Store, files: list[str]) -> None:
    """Marker first, card off, the parts, stale parts of an earlier export removed, the card
    last."""
    store.put_file(built / MARKER, MARKER)
    store.delete(CARD)
    for name in files:
        store.put_file(built / name, name)
    keep = set(files)
    for prefix in (*SPLITS, AUDIO_DIR):
        for key in list(store.list(f"{prefix}/")):
            if key not in keep:
                store.delete(key)
    store.put_file(built / CARD, CARD)
