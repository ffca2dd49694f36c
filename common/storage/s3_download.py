"""Resumable parallel download of one S3 object.

Parts are fetched with ranged GETs (``If-Match`` the ETag we started from) and written in place
into ``dest.part``; a small JSON sidecar ``dest.part.json`` records the ETag, size, part size and
the parts already written. An interrupted download (crash, preemption, too many errors) resumes by
fetching only the missing parts; if the object changed meanwhile it starts over. ``dest`` appears
only when complete (rename), so a reader never sees half a file.
"""

from __future__ import annotations

import json
import math
import os
import threading
from collections.abc import Callable
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from common.storage.base import StorageError
from common.storage.s3_body import MiB, ObjectChanged, transfer_part_size

if TYPE_CHECKING:
    from common.settings import Settings


class RangedStore(Protocol):
    """What a download needs of its store (common.storage.s3.S3Store)."""

    settings: Settings

    def head(self, key: str) -> dict[str, Any]: ...

    def child_url(self, key: str) -> str: ...

    def read_range(self, key: str, start: int, end: int, etag: str,
                   write: Callable[[int, bytes], object]) -> None: ...


@dataclass
class Progress:
    """What the sidecar holds: enough to trust the bytes already in ``dest.part``."""

    etag: str
    size: int
    part_size: int
    done: set[int] = field(default_factory=set)

    @property
    def n_parts(self) -> int:
        return max(1, math.ceil(self.size / self.part_size))

    def to_json(self) -> bytes:
        return json.dumps({"etag": self.etag, "size": self.size, "part_size": self.part_size,
                           "done": sorted(self.done)}).encode()

    @classmethod
    def load(cls, path: Path) -> Progress | None:
        try:
            d = json.loads(path.read_bytes())
            return cls(str(d["etag"]), int(d["size"]), int(d["part_size"]),
                       {int(i) for i in d["done"]})
        except (OSError, ValueError, KeyError, TypeError):
            return None


def paths(dest: Path) -> tuple[Path, Path]:
    return dest.with_name(dest.name + ".part"), dest.with_name(dest.name + ".part.json")


def download(store: RangedStore, key: str, dest: Path) -> Path:
    dest.parent.mkdir(parents=True, exist_ok=True)
    part_path, side_path = paths(dest)
    for attempt in range(2):  # once more from scratch if the object changes under us
        head = store.head(key)
        size, etag = int(head["ContentLength"]), str(head["ETag"])
        prog = _resume_or_start(store, part_path, side_path, size, etag)
        try:
            _fetch_missing(store, key, part_path, side_path, prog)
            break
        except ObjectChanged:
            side_path.unlink(missing_ok=True)
            if attempt:
                raise StorageError(f"GET {store.child_url(key)}: object keeps changing") from None
    os.replace(part_path, dest)
    side_path.unlink(missing_ok=True)
    return dest


def _resume_or_start(store: RangedStore, part_path: Path, side_path: Path, size: int,
                     etag: str) -> Progress:

    old = Progress.load(side_path)
    if (old is not None and old.etag == etag and old.size == size and part_path.is_file()
            and part_path.stat().st_size == size):
        return old
    s = store.settings
    prog = Progress(etag, size, transfer_part_size(size, s.s3_part_size_mb * MiB,
                                                   s.s3_concurrency))
    with open(part_path, "wb") as f:
        f.truncate(size)  # sparse; parts land at their offsets
    _save(side_path, prog)
    return prog


def _save(side_path: Path, prog: Progress) -> None:
    tmp = side_path.with_name(side_path.name + ".tmp")
    tmp.write_bytes(prog.to_json())
    os.replace(tmp, side_path)


def _fetch_missing(store: RangedStore, key: str, part_path: Path, side_path: Path,
                   prog: Progress) -> None:
    missing = [i for i in range(prog.n_parts) if i not in prog.done]
    if not missing or prog.size == 0:
        return
    lock = threading.Lock()
    stop = threading.Event()
    fd = os.open(part_path, os.O_WRONLY)
    try:
        def one(i: int) -> None:
            if stop.is_set():
                return
            _fetch_part(store, key, fd, prog, i)
            with lock:
                prog.done.add(i)
                _save(side_path, prog)

        workers = min(store.settings.s3_concurrency, len(missing))
        with ThreadPoolExecutor(max(1, workers), thread_name_prefix="s3get") as pool:
            futures = [pool.submit(one, i) for i in missing]
            done, _ = wait(futures, return_when=FIRST_EXCEPTION)
            errors = [e for f in done if (e := f.exception()) is not None]
            if errors:
                stop.set()  # parts in flight finish (and are recorded); queued ones are skipped
                for f in futures:
                    f.cancel()
                raise errors[0]
    finally:
        os.close(fd)


def _fetch_part(store: RangedStore, key: str, fd: int, prog: Progress, i: int) -> None:
    start = i * prog.part_size
    end = min(prog.size, start + prog.part_size) - 1
    store.read_range(key, start, end, prog.etag, lambda pos, chunk: os.pwrite(fd, chunk, pos))
