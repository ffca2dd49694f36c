"""Each worker process's scratch directory for the shard in hand, and the sweep of those whose
process is gone.

A process works in ``<scratch>/onsei-work-<stage>-<random>/`` (emptied after each shard,
removed when the process ends normally) and holds an exclusive ``flock`` on the file beside
it, ``...<random>.lock``, for as long as it lives: the kernel releases the lock when the process
dies, however it dies, so a directory whose lock can be taken belongs to no live worker. A
killed worker (SIGKILL, out of memory, a node restart) leaves its directory behind with what
the shard had there, a partial ``.part`` download of a multi-GB shard among it; the next
process to start on the node sweeps it (:func:`sweep`). The lock works across the containers of
a node that share the scratch volume, where a pid would not (each has its own pid namespace).

Directories from before the lock (``onsei-<stage>-<random>``) have nothing to ask: they are
swept once nothing in them changed for longer than a shard may run (``task_time_limit``).
"""

from __future__ import annotations

import fcntl
import logging
import os
import re
import shutil
import tempfile
import time
from pathlib import Path

log = logging.getLogger(__name__)

PREFIX = "onsei-work-"
# a directory of this scheme, and one from before it (tempfile.mkdtemp's 8 characters)
_OURS = re.compile(rf"{re.escape(PREFIX)}[A-Za-z0-9_.]+-[a-z0-9_]{{8}}")
_LEGACY = re.compile(r"onsei-(?!work-)[A-Za-z0-9_]+-[a-z0-9_]{8}")


def _lock_of(workdir: Path) -> Path:
    return workdir.with_name(workdir.name + ".lock")


def claim(scratch: Path, stage: str) -> tuple[Path, int]:
    """A new scratch directory of this process and the descriptor holding its lock (keep it
    open for as long as the directory is in use)."""
    scratch.mkdir(parents=True, exist_ok=True)
    path = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{stage}-", dir=scratch))
    fd = os.open(_lock_of(path), os.O_CREAT | os.O_RDWR, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)  # a new file: nobody else holds it
    return path, fd


def release(path: Path, fd: int) -> None:
    """The directory and its lock removed (the process is done with them)."""
    shutil.rmtree(path, ignore_errors=True)
    try:
        os.unlink(_lock_of(path))
    except OSError:
        pass
    try:
        os.close(fd)
    except OSError:
        pass


def _dead(lock: Path) -> int | None:
    """A descriptor holding ``lock`` when no live process holds it (its owner is gone), else
    None."""
    try:
        fd = os.open(lock, os.O_RDWR)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    return fd


def sweep(scratch: Path, stale_after: float) -> list[Path]:
    """Remove the scratch directories in ``scratch`` that belong to no live worker; returns
    them. Never raises: a sweep that cannot look costs nothing but the space."""
    removed: list[Path] = []
    try:
        entries = list(os.scandir(scratch))
    except OSError:
        return removed
    now = time.time()
    for entry in entries:
        path = Path(entry.path)
        try:
            if _OURS.fullmatch(entry.name) and entry.is_dir(follow_symlinks=False):
                fd = _dead(_lock_of(path))
                if fd is None:
                    # alive, or made a moment ago and not locked yet: only an old one is dead
                    if _lock_of(path).exists() or now - entry.stat().st_mtime < stale_after:
                        continue
                    shutil.rmtree(path, ignore_errors=True)
                else:
                    release(path, fd)
            elif (entry.name.endswith(".lock") and _OURS.fullmatch(entry.name[:-5])
                  and not path.with_name(entry.name[:-5]).exists()):
                fd = _dead(path)  # a lock whose directory is gone
                if fd is None:
                    continue
                os.unlink(path)
                os.close(fd)
                continue
            elif (_LEGACY.fullmatch(entry.name) and entry.is_dir(follow_symlinks=False)
                  and now - _newest(path) > stale_after):
                shutil.rmtree(path, ignore_errors=True)
            else:
                continue
        except OSError as e:
            log.debug("scratch sweep skipped %s: %s", path, e)
            continue
        removed.append(path)
        log.warning("removed %s: the scratch directory of a worker that is gone", path)
    return removed


def _newest(path: Path) -> float:
    """The latest mtime of ``path`` and what it holds."""
    newest = path.stat().st_mtime
    for root, dirs, files in os.walk(path):
        for name in dirs + files:
            try:
                newest = max(newest, os.stat(os.path.join(root, name),
                                             follow_symlinks=False).st_mtime)
            except OSError:
                continue
    return newest
