"""The compact form of trimmed done records that the per-machine record cache
(services/ops/status/recordcache.py) and the shared rollups in the store
(services/ops/status/rollup.py) both keep.

Columnar JSON: one list per field, so 50,000 records decode in a fraction of the time of
50,000 objects, and each distinct ``node`` block is written once (a fleet has a handful) and
shared by the records that name it. Each record keeps the listing tag it had when read
(``Store.list_tagged``), so a reader can tell whether it has been rewritten since.
"""

from __future__ import annotations

import json
from typing import Any

_NONE = type(None)
# What status and the cost block read from a record (the rest stays in the ledger), with the
# types a value may have; a trimmed record has every one of them, None where it had none.
COLUMNS: dict[str, frozenset[type]] = {
    "host": frozenset({str, _NONE}), "finished_at": frozenset({int, float, _NONE}),
    "wall_seconds": frozenset({int, float, _NONE}),
    "audio_seconds_in": frozenset({int, float, _NONE}),
    "audio_seconds_out": frozenset({int, float, _NONE})}
FIELDS = ("shard_id", *COLUMNS, "node")

Entry = tuple[str, dict[str, Any]]  # (listing tag, trimmed record)
Entries = dict[int, Entry]  # by shard id


def trim(record: dict[str, Any]) -> dict[str, Any]:
    """The fields of :data:`FIELDS`, a value of the wrong type (or a node block that is no
    object) read as None: such a record still counts, it adds nothing there."""
    out = {k: _typed(record.get(k), types) for k, types in COLUMNS.items()}
    node = record.get("node")
    return {"shard_id": record.get("shard_id"), **out,
            "node": node if isinstance(node, dict) else None}


def pack(entries: Entries) -> dict[str, Any]:
    ids = sorted(entries)
    recs = [entries[i][1] for i in ids]
    nodes: list[Any] = []
    by_obj: dict[int, int | None] = {}  # id(node block) -> slot: shared blocks cost nothing
    by_text: dict[str, int] = {}
    slots: list[int | None] = []
    for rec in recs:
        node = rec.get("node")
        slot = by_obj.get(id(node), -1)
        if slot == -1:
            slot = None
            if isinstance(node, dict):
                slot = by_text.setdefault(json.dumps(node, sort_keys=True), len(nodes))
                if slot == len(nodes):
                    nodes.append(node)
            by_obj[id(node)] = slot
        slots.append(slot)
    cols = {}
    for f, types in COLUMNS.items():
        col = [r.get(f) for r in recs]
        cols[f] = col if set(map(type, col)) <= types else [_typed(v, types) for v in col]
    return {"ids": ids, "tags": [entries[i][0] for i in ids], "nodes": nodes, "node": slots,
            "columns": cols}


def unpack(data: Any) -> Entries | None:
    """The entries of :func:`pack`'s output; None when anything is malformed (lengths, types,
    node slots): the caller reads the ledger instead."""
    try:
        ids, tags, nodes, slots, cols = (data["ids"], data["tags"], data["nodes"], data["node"],
                                         data["columns"])
        columns = [cols[f] for f in COLUMNS]
    except (KeyError, TypeError):
        return None
    n = len(ids) if isinstance(ids, list) else -1
    if not (_column(ids, n, {int}) and _column(tags, n, {str}) and _column(slots, n, {int, _NONE})
            and all(_column(c, n, t) for c, t in zip(columns, COLUMNS.values()))
            and isinstance(nodes, list) and all(isinstance(x, dict) for x in nodes)
            and (set(slots) - {None}) <= set(range(len(nodes)))):
        return None
    blocks = [None if s is None else nodes[s] for s in slots]
    keys = FIELDS
    return {row[0]: (tag, dict(zip(keys, row)))
            for tag, row in zip(tags, zip(ids, *columns, blocks))}


def dumps(data: dict[str, Any]) -> bytes:
    return json.dumps(data, separators=(",", ":")).encode()


def _typed(value: Any, types: frozenset[type]) -> Any:
    return value if type(value) in types else None


def _column(col: Any, n: int, types: set[type] | frozenset[type]) -> bool:
    return isinstance(col, list) and len(col) == n and set(map(type, col)) <= types
