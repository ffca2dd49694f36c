"""Download the next shard while the model computes this one, without ever losing it.

A worker reserves ``prefetch_shards`` messages beyond the one in hand (unacked: if the worker
dies, Redis gives them back after the visibility timeout). When one is received
(``task_received``, in the worker's main process) a background thread fetches its inputs into
``<scratch>/prefetch/<stage>/<run>/<shard>/``; the task (in a pool process) then finds them ready.

``<run>`` is a hash of the input and output URLs: two runs over different inputs on one node
never see each other's downloads (a run whose input lacks shard 2 must not process another
run's shard 2). And nothing is reused on its name alone: the manifest records each input's identity
(size + ETag on S3, size + mtime on disk) when it was fetched, and a copy is used only while the
source still has that identity and the file that size.

Parent and pool process agree through an exclusive ``flock`` per shard (released by the kernel
when a holder dies) and a manifest written last: whoever takes the lock first downloads, the
other uses the result. A half-written download is never used: without a manifest the files
are fetched again.
"""

from __future__ import annotations

import fcntl
import hashlib
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


def run_key(settings: Settings) -> str:
    """The scratch namespace of one (input, output) pair."""
    both = f"{settings.input_url}\n{settings.output_url}".encode()
    return hashlib.sha256(both).hexdigest()[:16]


def prefetch_root(settings: Settings, stage: str) -> Path:
    return Path(settings.scratch_dir) / "prefetch" / stage / run_key(settings)


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


Fetch = Callable[[int, Path], dict[str, Path]]  # (shard id, directory) -> local inputs by name


def _identities(fetch: Fetch, shard_id: int) -> dict[str, str]:
    """The inputs' identities now, from the fetch's owner (``Engine.fetch``: its
    ``input_identities``); {} for a bare fetch function, which only the manifest guards."""
    identify = getattr(getattr(fetch, "__self__", None), "input_identities", None)
    return identify(shard_id) if identify is not None else {}


def _read_manifest(d: Path, identity: dict[str, str]) -> dict[str, Path] | None:
    """The complete download in ``d`` if its sources still have ``identity``, else None."""
    try:
        manifest = json.loads((d / MANIFEST).read_text())
        files, recorded = manifest["files"], manifest["identity"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if recorded != identity:
        return None  # a source changed (or another input) since it was fetched
    paths = {k: d / v for k, v in files.items()}
    for name, p in paths.items():
        size = identity.get(name, "").split(":", 1)[0]
        if not p.is_file() or (size and p.stat().st_size != int(size)):
            return None
    return paths


def fetch_into(fetch: Fetch, stage: str, shard_id: int, settings: Settings) -> dict[str, Path]:
    """The shard's inputs in its prefetch dir: reuse a complete download whose sources are
    unchanged, or make one, locked."""
    root = prefetch_root(settings, stage)
    stem = settings.shard_stem(shard_id)
    d = root / stem
    identity = _identities(fetch, shard_id)  # raises NotFound for a missing input
    with shard_lock(root, stem):
        ready = _read_manifest(d, identity)
        if ready is not None:
            return ready
        shutil.rmtree(d, ignore_errors=True)  # partial, stale, or of a changed source
        d.mkdir(parents=True)
        paths = fetch(shard_id, d)
        rel = {k: str(p.relative_to(d)) for k, p in paths.items()}
        tmp = d / f".{MANIFEST}.part"
        tmp.write_text(json.dumps({"files": rel, "identity": identity}))
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
        """Remove downloads older than the visibility timeout (their message went elsewhere),
        of every run that used this scratch dir."""
        stage_dir = prefetch_root(self.settings, self.stage).parent
        if not stage_dir.is_dir():
            return
        cutoff = time.time() - self.settings.visibility_timeout
        for root in stage_dir.iterdir():
            if root.is_dir():
                _gc_root(root, cutoff)


def _gc_root(root: Path, cutoff: float) -> None:
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
