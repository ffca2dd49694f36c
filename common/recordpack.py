"""The compact form of trimmed done records that the per-machine record cache
(common/recordcache.py) and the shared rollups in the store (common/rollup.py) both keep:
``{shard id: [tag, record, node slot]}`` with each distinct ``node`` block written once (a fleet
has a handful of node types: a third the size of repeating it in every record).

``tag`` is the record's listing tag when it was read (``Store.list_tagged``), so a reader can
tell whether the record it stands for has been rewritten since.
"""

from __future__ import annotations

import json
from typing import Any

# What status and the cost block read from a record (the rest stays in the ledger).
FIELDS = ("shard_id", "host", "finished_at", "wall_seconds", "audio_seconds_in",
          "audio_seconds_out", "node")

Entries = dict[str, list[Any]]  # str(shard id) -> [tag, trimmed record, node slot | None]


def trim(record: dict[str, Any]) -> dict[str, Any]:
    return {k: record[k] for k in FIELDS if k in record}


def pack(entries: Entries) -> dict[str, Any]:
    """``{"nodes": [...], "records": {...}}`` (node blocks by slot)."""
    index: dict[str, int] = {}
    nodes: list[Any] = []
    rows: Entries = {}
    for key, (tag, rec, *_) in entries.items():
        node = rec.get("node")
        slot = None
        if node is not None:
            text = json.dumps(node, sort_keys=True)
            slot = index.setdefault(text, len(nodes))
            if slot == len(nodes):
                nodes.append(node)
        rows[key] = [tag, {k: v for k, v in rec.items() if k != "node"}, slot]
    return {"nodes": nodes, "records": rows}


def unpack(data: Any) -> Entries:
    """The entries of :func:`pack`'s output, records with their node blocks back (one dict per
    distinct block, shared). Malformed input yields {}: the caller reads the ledger instead."""
    if not isinstance(data, dict):
        return {}
    entries, nodes = data.get("records"), data.get("nodes")
    if not isinstance(entries, dict) or not isinstance(nodes, list):
        return {}
    try:
        for entry in entries.values():
            if entry[2] is not None:
                entry[1]["node"] = nodes[entry[2]]
    except (IndexError, TypeError, KeyError):
        return {}
    return entries


def dumps(data: dict[str, Any]) -> bytes:
    return json.dumps(data, separators=(",", ":")).encode()
