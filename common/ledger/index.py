"""The ledger's index: done records read once. Whoever needs the done shards with readable
records (``enqueue-shards`` and ``onsei run`` to schedule, ``onsei status`` to report) reads
them here: over 50,000 shards only the records written or rewritten since the last call on this
machine are read, and a machine's first call reads the shared rollups of the store
(common/ledger/rollup.py) instead of every record.

Two caches, both keyed by each record's listing tag (``Store.list_tagged``: its ETag on S3,
inode, mtime and size on a local disk), so a redone shard is re-read and never served stale:
a local file per output root and stage under ``scratch_dir/ledger-cache/``, and the store's
rollups of 1,000 shard ids. The listing every caller makes anyway gives the current tags and
the done count; records the caches cannot vouch for are read one by one, and the blocks where
that happened get their rollup rewritten. Deleting either cache costs reads, never correctness.
"""

from __future__ import annotations

import gc
import hashlib
import json
import logging
import multiprocessing
import os
from collections import defaultdict
from collections.abc import Callable, Collection, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any

from common.ledger import rollup
from common.ledger.pack import FIELDS, Entries, Trimmed, dumps, pack, trim, unpack
from common.ledger.records import RecordError
from common.ledger.store import Ledger

log = logging.getLogger(__name__)

__all__ = ["FIELDS", "Loaded", "cache_path", "done_records", "load_done", "valid_done"]
VERSION = 4  # 4: columnar with a checksum (common/ledger/pack.py)
# A block's rollup (one GET, and one PUT when rewritten, of up to ~170 KB) is consulted and
# rewritten only when at least this many of its records are not known locally: fewer are
# cheaper read one by one.
ROLLUP_MIN = 10
# Records read one by one on a local disk: in worker processes from this many on.
PROCESS_MIN = 4000
MAX_PROCESSES = 8


@dataclass
class Loaded:
    """One stage's done records: ``done`` from the listing (the truth), ``records`` the trimmed
    bodies of those still there when read; the rest say what it cost."""

    done: set[int]
    records: list[Trimmed]
    corrupt: dict[int, str] = field(default_factory=dict)  # shard id -> why: not done
    record_reads: int = 0
    rollup_reads: int = 0
    rollups_written: int = 0
    from_rollups: int = 0


def cache_path(ledger: Ledger, stage: str) -> Path:
    s = ledger.settings
    name = hashlib.sha256(f"{ledger.store.url}\n{ledger.stage_dir(stage)}".encode()).hexdigest()
    return Path(s.scratch_dir) / "ledger-cache" / f"{name[:24]}.json"


def _load(path: Path) -> Entries:
    try:
        data = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("version") != VERSION:
        return {}
    return unpack(data) or {}


def _save(path: Path, entries: Entries) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.part")
        tmp.write_bytes(dumps({"version": VERSION, **pack(entries)}))
        os.replace(tmp, path)
    except OSError as e:  # a read-only scratch only costs the next call a full read
        log.debug("ledger cache not saved: %s", e)


def valid_done(ledger: Ledger, stage: str, ids: Collection[int] | None = None) -> set[int]:
    """The shards whose done record reads as one: a listing alone would count a corrupt or
    empty record as done, and the shard would never be redone (enqueue, ``onsei run``)."""
    loaded = load_done(ledger, stage, ids)
    for i, why in sorted(loaded.corrupt.items()):
        log.warning("%s shard %d: corrupt done record, redone: %s", stage, i, why)
    return loaded.done


def done_records(ledger: Ledger, stage: str, ids: Collection[int] | None = None,
                 threads: int | None = None) -> list[Trimmed]:
    """The (trimmed) done records of ``stage`` among ``ids``."""
    return load_done(ledger, stage, ids, threads).records


def load_done(ledger: Ledger, stage: str, ids: Collection[int] | None = None,
              threads: int | None = None) -> Loaded:
    """One listing; then the local cache, the rollups of blocks with ``ROLLUP_MIN`` or more
    records unknown here, and a GET for each record neither vouches for."""
    tagged = ledger.done_tagged(stage, ids)
    path = cache_path(ledger, stage)
    entries = _load(path)
    out = Loaded(done=set(tagged), records=[])
    none = ("", None)
    stale = [i for i, tag in tagged.items() if not tag or entries.get(i, none)[0] != tag]
    if stale:
        _refresh(ledger, stage, ids, tagged, entries, stale,
                 threads or ledger.store.parallel_reads, out)
        if ids is None:  # a full listing: forget records that are gone
            entries = {k: v for k, v in entries.items() if k in tagged}
        _save(path, entries)
    out.done -= set(out.corrupt)
    out.records = [entries[i][1] for i in sorted(tagged) if i in entries]
    return out


def _refresh(ledger: Ledger, stage: str, ids: Collection[int] | None, tagged: dict[int, str],
             entries: Entries, stale: list[int], threads: int, out: Loaded) -> None:
    """Bring ``entries`` up to date for ``stale``: rollups first, then single records; rewrite
    the rollups of blocks where records had to be read one by one."""
    if threads <= 1:  # a local disk: no thread start-up, nothing to overlap
        _refresh_with(ledger, stage, ids, tagged, entries, stale, map, threads, out)
        return
    with ThreadPoolExecutor(threads) as pool:  # S3: latency-bound, threads overlap it
        _refresh_with(ledger, stage, ids, tagged, entries, stale, pool.map, threads, out)


def _refresh_with(ledger: Ledger, stage: str, ids: Collection[int] | None,
                  tagged: dict[int, str], entries: Entries, stale: list[int],
                  pmap: Callable[..., Iterable[Any]], threads: int, out: Loaded) -> None:
    by_block: dict[int, list[int]] = defaultdict(list)
    for i in stale:
        by_block[rollup.block_of(i)].append(i)
    big = [b for b, members in by_block.items() if len(members) >= ROLLUP_MIN]
    rolls = dict(zip(big, pmap(lambda b: rollup.read(ledger, stage, b), big)))
    out.rollup_reads = len(big)
    todo = []
    for i in stale:
        hit = (rolls.get(rollup.block_of(i)) or {}).get(i)
        if hit is not None and tagged[i] and hit[0] == tagged[i]:
            entries[i] = hit
            out.from_rollups += 1
        else:
            todo.append(i)

    # a task per chunk, not per record: 150,000 futures cost more than local reads do
    with _record_reader(ledger, stage, len(todo), threads, pmap) as (read_map, workers):
        size = max(1, min(64 if threads > 1 else 2000, len(todo) // (4 * workers)))
        chunks = [todo[k:k + size] for k in range(0, len(todo), size)]
        results = list(read_map(chunks))
    nodes: dict[Any, dict[str, Any]] = {}  # one shared dict per distinct node block
    read_per_block: dict[int, int] = defaultdict(int)
    for done in results:
        for i, rec, why in done:
            out.record_reads += 1
            if rec is None:  # deleted since the listing, or corrupt
                entries.pop(i, None)
                if why is not None:
                    out.corrupt[i] = why
                continue
            if rec.node is not None:
                rec = replace(rec, node=nodes.setdefault(_node_key(rec.node), rec.node))
            entries[i] = (tagged[i], rec)
            read_per_block[rollup.block_of(i)] += 1
    rewrite = [b for b, n in read_per_block.items() if n >= ROLLUP_MIN]
    out.rollups_written = sum(pmap(
        lambda b: rollup.write(ledger, stage, b, _block_entries(
            b, rolls.get(b), ids, tagged, entries)), rewrite))


Read = tuple[int, Trimmed | None, str | None]  # (shard id, trimmed record, why corrupt)


def _read_records(ledger: Ledger, stage: str, chunk: list[int]) -> list[Read]:
    got: list[Read] = []
    for i in chunk:
        try:
            rec = ledger.read_done(stage, i)
        except RecordError as e:  # corrupt: not done, whatever the listing says
            log.warning("%s: done record of shard %d is corrupt: %s", stage, i, e)
            got.append((i, None, str(e)))
            continue
        got.append((i, None if rec is None else trim(rec), None))
    return got


_forked: tuple[Ledger, str] | None = None  # what forked readers inherit (see below)


def _read_forked(chunk: list[int]) -> list[Read]:
    assert _forked is not None
    return _read_records(*_forked, chunk)


@contextmanager
def _record_reader(ledger: Ledger, stage: str, n: int, threads: int,
                   pmap: Callable[..., Iterable[Any]]) -> Iterator[tuple[Callable[..., Any], int]]:
    """A map over chunks of shard ids and its width. Many records on a local disk are
    CPU-bound (open + JSON: a fresh ledger's first status reads 150,000), so they are read by
    forked processes, which inherit the ledger (its pipeline holds lambdas: no pickling)."""
    global _forked
    procs = min(os.cpu_count() or 1, MAX_PROCESSES)
    if (threads > 1 or n < PROCESS_MIN or procs < 2
            or "fork" not in multiprocessing.get_all_start_methods()):
        yield (lambda chunks: pmap(partial(_read_records, ledger, stage), chunks)), threads
        return
    _forked = (ledger, stage)
    gc.freeze()  # the children's collector would walk (and copy) every inherited object
    try:
        with ProcessPoolExecutor(procs, mp_context=multiprocessing.get_context("fork")) as pool:
            yield (lambda chunks: pool.map(_read_forked, chunks)), procs
    finally:
        gc.unfreeze()
        _forked = None


def _node_key(node: dict[str, Any]) -> Any:
    """A hashable key of a node block: its items when they are plain values (a tenth of the
    cost of JSON text, which nested values still get)."""
    try:
        key = tuple(sorted(node.items()))
        hash(key)  # a nested dict or list in a value fails here
        return key
    except TypeError:
        return json.dumps(node, sort_keys=True)


def _block_entries(block: int, old: Entries | None, ids: Collection[int] | None,
                   tagged: dict[int, str], entries: Entries) -> Entries:
    """A block's new rollup: what this listing vouches for, plus the old rollup's entries of
    ids outside the listed range (still checked against the tags by whoever reads them)."""
    lo = block * rollup.BLOCK
    merged = {k: e for k, e in (old or {}).items() if ids is not None and k not in ids}
    for i in range(lo, lo + rollup.BLOCK):
        e = entries.get(i)
        if i in tagged and e is not None and e[0] == tagged[i] and e[0]:
            merged[i] = e
    return merged
