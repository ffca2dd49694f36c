"""Shared rollups of done records in the store: ``_ledger/_rollup/<stage dir>/block-000012.json``
holds the trimmed done records of shard ids 12000..12999 with the listing tag each had when
read (docs/operations.md, "Watch"). A machine's first ``onsei status`` then reads ~50 rollups
per stage at 50,000 shards instead of 50,000 records.

A rollup is a cache, never the truth: the done count comes from the listing, and an entry is
used only when its tag equals the record's tag in this listing (a redone shard has a new ETag
on S3, a new inode on a local disk), so a stale entry is read again from its record; a
malformed rollup (bad JSON, mismatched columns, wrong types) is ignored as a whole and entries
of ids outside its block are dropped. Any reader that had to read records
itself writes the block's rollup back (common/ledger/index.py); deleting rollups is
always safe.
"""

from __future__ import annotations

import json
import logging

from common.ledger.pack import Entries, dumps, pack, unpack
from common.ledger.store import LEDGER, Ledger
from common.storage import NotFound, StorageError

log = logging.getLogger(__name__)

BLOCK = 1000  # shard ids per rollup
VERSION = 1


def block_of(shard_id: int) -> int:
    return shard_id // BLOCK


def rollup_key(ledger: Ledger, stage: str, block: int) -> str:
    sub = ledger.stage_dir(stage)[len(LEDGER) + 1:]
    return f"{LEDGER}/_rollup/{sub}/block-{block:06d}.json"


def read(ledger: Ledger, stage: str, block: int) -> Entries | None:
    """The block's well-formed entries ({} when it has none); None when the rollup is missing
    or unreadable as a whole (the caller then writes a fresh one)."""
    key = rollup_key(ledger, stage, block)
    try:
        data = json.loads(ledger.store.read_bytes(key))
    except NotFound:
        return None
    except (ValueError, StorageError) as e:  # corrupt, or the store failed: read the records
        log.warning("rollup %s unreadable, its records are read instead: %s", key, e)
        return None
    if (not isinstance(data, dict) or data.get("version") != VERSION
            or data.get("dir") != ledger.stage_dir(stage) or data.get("block") != block):
        log.warning("rollup %s is not one of this stage's: ignored", key)
        return None
    entries = unpack(data)
    if entries is None:
        log.warning("rollup %s is malformed: ignored", key)
        return None
    return {i: e for i, e in entries.items() if block_of(i) == block and e[0]}


def write(ledger: Ledger, stage: str, block: int, entries: Entries) -> bool:
    """Replace the block's rollup (one atomic PUT). False when the store refused (read-only
    credentials): the next reader reads the records, nothing else changes."""
    body = {"version": VERSION, "dir": ledger.stage_dir(stage), "block": block, **pack(entries)}
    try:
        ledger.store.write_bytes(rollup_key(ledger, stage, block), dumps(body))
    except (StorageError, OSError) as e:
        log.debug("rollup %s not written: %s", rollup_key(ledger, stage, block), e)
        return False
    return True
