"""Download the next shard while the model computes this one, without ever losing it.

A worker reserves ``prefetch_shards`` messages beyond the one in hand (unacked: if the worker
dies, Redis gives them back after the visibility timeout). When one is received
(``task_received``, in the worker's main process) a background thread fetches its inputs into
``<scratch>/prefetch/<stage>/<shard>/``; the task (in a pool process) then finds them ready.

Parent and pool process agree through an exclusive ``flock`` per shard (released by the kernel
when a holder dies) and a manifest written last: whoever takes the lock first downloads, the
other uses the result. A half-written download is never used: without a manifest the files
are fetched again.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import queue
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from common.settings import Settings

log = logging.getLogger(__name__)
MANIFEST = "manifest.json"


def prefetch_root(settings: Settings, stage: str) -> Path:
    return Path(settings.scratch_dir) / "prefetch" / stage


@contextmanager
def shard_lock(root: Path, stem: str) -> Iterator[None]:
    root.mkdir(parents=True, exist_ok=True)
    fd = os.open(root / f"{stem}.lock", os.O_CREAT | os.O_RDWR, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def _read_manifest(d: Path) -> dict[str, Path] | None:
    try:
        names = json.loads((d / MANIFEST).read_text())
    except (OSError, ValueError):
        return None
    paths = {k: d / v for k, v in names.items()}
    return paths if all(p.is_file() for p in paths.values()) else None


Fetch = Callable[[int, Path], dict[str, Path]]  # (shard id, directory) -> local inputs by name


def fetch_into(fetch: Fetch, stage: str, shard_id: int, settings: Settings) -> dict[str, Path]:
    """The shard's inputs in its prefetch dir: reuse a complete download or make one, locked."""
    root = prefetch_root(settings, stage)
    stem = settings.shard_stem(shard_id)
    d = root / stem
    with shard_lock(root, stem):
        ready = _read_manifest(d)
        if ready is not None:
            return ready
        shutil.rmtree(d, ignore_errors=True)  # a partial download of a dead process
        d.mkdir(parents=True)
        paths = fetch(shard_id, d)
        rel = {k: str(p.relative_to(d)) for k, p in paths.items()}
        tmp = d / f".{MANIFEST}.part"
        tmp.write_text(json.dumps(rel))
        os.replace(tmp, d / MANIFEST)  # complete only now
        return paths


def discard(stage: str, shard_id: int, settings: Settings) -> None:
    root = prefetch_root(settings, stage)
    stem = settings.shard_stem(shard_id)
    with shard_lock(root, stem):
        shutil.rmtree(root / stem, ignore_errors=True)


class Prefetcher:
    """One background thread per worker process fetching received shards in order."""

    def __init__(self, stage: str, fetch: Fetch, is_done: Callable[[int], bool],
                 settings: Settings) -> None:
        self.stage = stage
        self.fetch = fetch
        self.is_done = is_done
        self.settings = settings
        self._q: queue.Queue[int] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self.fetched = 0

    def submit(self, shard_id: int) -> None:
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._loop, name="onsei-prefetch",
                                                daemon=True)
                self._thread.start()
        self._q.put(int(shard_id))

    def _loop(self) -> None:
        self.gc()
        while True:
            shard_id = self._q.get()
            try:
                if self.is_done(shard_id):
                    continue
                t0 = time.monotonic()
                fetch_into(self.fetch, self.stage, shard_id, self.settings)
                self.fetched += 1
                log.info("%s %s: inputs prefetched in %.2fs", self.stage, shard_id,
                         time.monotonic() - t0)
            # the task fetches again and reports the real error
            except Exception as e:  # noqa: BLE001
                log.warning("%s %s: prefetch failed: %s", self.stage, shard_id, e)
            finally:
                self._q.task_done()

    def join(self) -> None:
        self._q.join()

    def gc(self) -> None:
        """Remove downloads older than the visibility timeout (their message went elsewhere)."""
        root = prefetch_root(self.settings, self.stage)
        if not root.is_dir():
            return
        cutoff = time.time() - self.settings.visibility_timeout
        for d in root.iterdir():
            try:
                if d.stat().st_mtime >= cutoff:
                    continue
                if d.is_dir():
                    with shard_lock(root, d.name):
                        shutil.rmtree(d, ignore_errors=True)
                elif d.suffix == ".lock":  # nobody waits on a lock this old
                    d.unlink(missing_ok=True)
            except OSError:
                continue
