"""Done records read once per machine: ``onsei status`` over 50,000 shards re-reads only the
records written or rewritten since its last call.

The cache is a local file per output root and stage, under ``scratch_dir/ledger-cache/``,
mapping each record to the tag it had when read (``Store.list_tagged``: its ETag on S3, mtime
and size on a local disk) and the fields status and cost use. The listing status does anyway
returns the current tags, so a record is re-read exactly when its tag differs: a redone shard
is never served stale. The ledger stays the truth: deleting the cache costs one full read.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Collection
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from common.ledger import Ledger

log = logging.getLogger(__name__)

# What status and the cost block read from a record (the rest stays in the ledger).
FIELDS = ("shard_id", "host", "finished_at", "wall_seconds", "audio_seconds_in",
          "audio_seconds_out", "node")
VERSION = 2


def cache_path(ledger: Ledger, stage: str) -> Path:
    s = ledger.settings
    name = hashlib.sha256(f"{ledger.store.url}\n{ledger.stage_dir(stage)}".encode()).hexdigest()
    return Path(s.scratch_dir) / "ledger-cache" / f"{name[:24]}.json"


def _load(path: Path) -> dict[str, list[Any]]:
    try:
        data = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("version") != VERSION:
        return {}
    entries, nodes = data.get("records"), data.get("nodes")
    if not isinstance(entries, dict) or not isinstance(nodes, list):
        return {}
    try:
        for entry in entries.values():  # [tag, record, node index]: one node dict shared
            if entry[2] is not None:
                entry[1]["node"] = nodes[entry[2]]
    except (IndexError, TypeError, KeyError):
        return {}
    return entries


def _save(path: Path, entries: dict[str, list[Any]]) -> None:
    """Each distinct node block is written once (a fleet has a handful): a third the size."""
    index: dict[str, int] = {}
    nodes: list[Any] = []
    rows: dict[str, list[Any]] = {}
    for key, (tag, rec, *_) in entries.items():
        node = rec.get("node")
        slot = None
        if node is not None:
            text = json.dumps(node, sort_keys=True)
            slot = index.setdefault(text, len(nodes))
            if slot == len(nodes):
                nodes.append(node)
        rows[key] = [tag, {k: v for k, v in rec.items() if k != "node"}, slot]
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.part")
        tmp.write_bytes(json.dumps({"version": VERSION, "nodes": nodes, "records": rows},
                                   separators=(",", ":")).encode())
        os.replace(tmp, path)
    except OSError as e:  # a read-only scratch only costs the next call a full read
        log.debug("ledger cache not saved: %s", e)


def done_records(ledger: Ledger, stage: str, ids: Collection[int] | None = None,
                 threads: int = 16) -> list[dict[str, Any]]:
    """The (trimmed) done records of ``stage`` among ``ids``: one listing, a GET only for
    records new or rewritten since the last call on this machine."""
    tagged = ledger.done_tagged(stage, ids)
    path = cache_path(ledger, stage)
    entries = _load(path)
    stale = [i for i, tag in tagged.items()
             if not tag or entries.get(str(i), [None])[0] != tag]

    def read(i: int) -> tuple[int, dict[str, Any] | None]:
        rec = ledger.read_done(stage, i)
        return i, None if rec is None else {k: rec[k] for k in FIELDS if k in rec}

    if stale:
        with ThreadPoolExecutor(threads) as pool:  # S3: latency-bound, threads overlap it
            for i, rec in pool.map(read, stale):
                if rec is None:  # deleted since the listing
                    entries.pop(str(i), None)
                else:
                    entries[str(i)] = [tagged[i], rec, None]
        if ids is None:  # a full listing: forget records that are gone
            entries = {k: v for k, v in entries.items() if int(k) in tagged}
        _save(path, entries)
    return [entries[str(i)][1] for i in sorted(tagged) if str(i) in entries]
