"""Where an export may go, and publishing it whole.

Every export directory holds a marker, ``.onsei-export.json`` (its id, when it was made, and
its manifest: every file the export wrote), written when its staging directory is created and
sealed with the manifest before it is published. An existing ``--to`` is replaced only when it
carries that marker (or is an empty directory): a project directory, the current directory,
the output root or a directory above it, or anything under the ledger is refused before any
work, whatever files it holds. A re-export replaces only what the earlier export's manifest
lists: anything else (``.git/``, ``.gitattributes``, ``LICENSE``: what cloning a dataset repo
into ``--to`` gives) is moved into the new export and named; one that the new export would
overwrite refuses the export, nothing changed. A marker without a manifest (an older onsei)
counts the card, the split folders and ``webdataset/`` as its own.

A local ``--to`` is built in a sibling (``.<name>.partial-<id>``) and swapped in by two
renames: the old export aside (``.<name>.old-<id>``), the new one into place. A process killed
between them leaves no ``--to``; the next export to that path first restores the old one and
removes every leftover sibling that carries the marker (an old one's foreign files first
moved back into ``--to``). A running export holds an ``flock`` on
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
from common.storage import NotFound, Store, split_url
from services.ops.export.audio import AUDIO_DIR
from services.ops.export.split import SPLITS

CARD = "README.md"
MARKER = ".onsei-export.json"
MARKER_BYTES = 64 << 20
# what an export written before manifests holds (publish_store listed these prefixes then)
_LEGACY = (CARD, MARKER, *SPLITS, AUDIO_DIR)


class ExportTargetError(ValueError):
    """``--to`` cannot receive an export (one line, nothing written)."""


class ExportMarker(Record):
    """``.onsei-export.json``: what makes a directory an export that a later one may replace."""

    export_id: str
    created_at: float
    files: list[str] | None = None  # relative paths written (the marker too); None: older onsei


def new_marker() -> ExportMarker:
    return ExportMarker(export_id=uuid.uuid4().hex, created_at=time.time())


def read_marker(directory: Path) -> ExportMarker | None:
    """The marker of ``directory`` (None: not a directory, or no readable marker)."""
    path = directory / MARKER
    if directory.is_symlink() or not directory.is_dir() or not path.is_file():
        return None
    try:
        with open(path, "rb") as f:  # a manifest of many parts; never a whole foreign file
            return ExportMarker.from_json(f.read(MARKER_BYTES))
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


# --- the manifest: what an export wrote, and what in --to is someone else's -------------------
def seal(built: Path, marker: ExportMarker) -> ExportMarker:
    """Write ``marker`` again with the manifest of ``built``: every file in it but the marker."""
    files = sorted(p.relative_to(built).as_posix() for p in built.rglob("*")
                   if p.is_file() and p.name != MARKER)
    sealed = marker.model_copy(update={"files": files})
    (built / MARKER).write_text(sealed.to_json(), encoding="utf-8")
    return sealed


def foreign(directory: Path, marker: ExportMarker | None) -> list[str]:
    """What in an earlier export ``directory`` its export did not write (its manifest), as
    relative paths: a folder whole where nothing in it was written (``.git``)."""
    if marker is None or marker.files is None:
        return sorted(c.name for c in directory.iterdir() if c.name not in _LEGACY)
    own = {*marker.files, MARKER}
    dirs = {f.rsplit("/", k)[0] for f in own for k in range(1, f.count("/") + 1)}
    out: list[str] = []

    def walk(d: Path, rel: str) -> None:
        for child in sorted(d.iterdir(), key=lambda c: c.name):
            r = rel + child.name
            if r in own:
                continue
            if r in dirs and child.is_dir() and not child.is_symlink():
                walk(child, r + "/")
            else:
                out.append(r)

    walk(directory, "")
    return out


def _taken(root: Path, rel: str) -> bool:
    """Whether ``rel`` cannot be moved into ``root``: it, or a file where a folder of its path
    would go, exists there."""
    parts = rel.split("/")
    for i in range(1, len(parts) + 1):
        p = root.joinpath(*parts[:i])
        if os.path.lexists(p) and (i == len(parts) or p.is_symlink() or not p.is_dir()):
            return True
    return False


def _placed(src: Path, dest: Path, rels: list[str]) -> tuple[list[str], list[str]]:
    """(what to move, what clashes) to bring ``rels`` of ``src`` into ``dest``: a folder that
    ``dest`` holds too is merged, file by file; a file where ``dest`` has one clashes."""
    moves: list[str] = []
    clashes: list[str] = []

    def place(rel: str) -> None:
        s, d = src / rel, dest / rel
        if not os.path.lexists(d):
            (clashes if _taken(dest, rel) else moves).append(rel)
        elif s.is_dir() and not s.is_symlink() and d.is_dir() and not d.is_symlink():
            for child in sorted(s.iterdir(), key=lambda c: c.name):
                place(f"{rel}/{child.name}")
        else:
            clashes.append(rel)

    for rel in rels:
        place(rel)
    return moves, clashes


def _move(src: Path, dest: Path, paths: list[str]) -> None:
    for rel in paths:
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        os.rename(src / rel, dest / rel)


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
        for p, m, _ in held:
            if not p.exists():
                continue
            if ".old-" in p.name and dest.is_dir() and not dest.is_symlink():
                back, clash = _placed(p, dest, foreign(p, m))
                _move(p, dest, back)  # the user's files, set aside with the earlier export
                if back:
                    done.append(f"moved {', '.join(back[:5])}"
                                + (f" and {len(back) - 5} more" if len(back) > 5 else "")
                                + f" (not written by onsei export) from {p.name} into {dest}")
                if clash:  # never removed with the rest: the user sorts them out
                    done.append(f"kept {p.name}: it holds {', '.join(clash[:5])}, not written "
                                f"by onsei export, which {dest} has too")
                    continue
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


def publish_local(built: Path, dest: Path) -> list[str]:
    """Swap ``built`` into ``dest``: an empty directory is removed, an earlier export set
    aside (held, so a concurrent export's recovery leaves it), what in it the earlier export did
    not write moved into the new one, then the rest removed. Returns what was moved."""
    check_local_target(dest)
    if not dest.exists():
        os.rename(built, dest)
        return []
    if not any(dest.iterdir()):
        os.rmdir(dest)
        os.rename(built, dest)
        return []
    fd = _lock(dest)
    if fd is None:
        raise ExportTargetError(f"--to {dest} is being replaced by another export right now")
    try:
        keep, clash = _placed(dest, built, foreign(dest, read_marker(dest)))
        if clash:
            raise ExportTargetError(
                f"--to {dest}: {clash[0]} was not written by the earlier export (not in its "
                f"{MARKER}) and this export writes it: move it away and export again")
        old = dest.parent / f".{dest.name}.old-{uuid.uuid4().hex[:16]}"
        os.rename(dest, old)
        os.rename(built, dest)
        _move(old, dest, keep)
        _remove(old)
    finally:
        os.close(fd)
    return keep


# --- object store ------------------------------------------------------------------------------
def publish_store(built: Path, store: Store, files: list[str]) -> None:
    """Marker first (its manifest: what this export and the earlier one wrote, so an export
    killed half-way leaves its successor the list to remove), card off, the parts, what the
    earlier export wrote and this one does not removed, the card, the marker with this export's
    files alone. Objects no export wrote stay."""
    marker = read_marker(built)
    if marker is None:
        raise ExportTargetError(f"{built} has no {MARKER}")  # staging() wrote it
    before = _store_manifest(store)
    new = {*files, CARD}
    store.write_bytes(MARKER, marker.model_copy(
        update={"files": sorted(before | new)}).to_json().encode())
    store.delete(CARD)
    for name in files:
        store.put_file(built / name, name)
    for key in sorted(before - new - {MARKER}):
        store.delete(key)
    store.put_file(built / CARD, CARD)
    store.put_file(built / MARKER, MARKER)


def _store_manifest(store: Store) -> set[str]:
    """What the export at ``store`` wrote: its marker's manifest, else (an older onsei's)
    the card and everything under the split and audio prefixes."""
    try:
        raw = store.read_bytes(MARKER)
    except NotFound:
        raw = b""
    try:
        files = ExportMarker.from_json(raw[:MARKER_BYTES]).files if raw else None
    except RecordError:
        files = None
    if files is not None:
        return set(files)
    return {CARD, *(k for prefix in (*SPLITS, AUDIO_DIR) for k in store.list(f"{prefix}/"))}
