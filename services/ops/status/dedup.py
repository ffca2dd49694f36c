"""How far the dedup index is (``onsei status``): the enhanced shards its result covers.

Reads ``dedup/summary.json`` only (the duplicate list can be large; status runs often); the
check that the list belongs to the summary is tokenize's and ``onsei export``'s, which apply it.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from common.storage import NotFound, StorageError, Store
from services.dedup.result import SUMMARY_KEY, DedupSummary
from services.records import RecordError


def index_progress(store: Store, enhanced: Collection[int]) -> dict[str, Any]:
    """``enhanced``: the enhanced shards (in the range asked). ``ran`` False: never ran;
    ``error``: the summary could not be read (the rest is then unknown)."""
    out: dict[str, Any] = {"ran": False, "enhanced": len(enhanced), "covered": 0,
                           "behind": len(enhanced), "error": None}
    try:
        summary = DedupSummary.from_json(store.read_bytes(SUMMARY_KEY))
    except NotFound:
        return out
    except (RecordError, StorageError) as e:
        return {**out, "ran": True, "behind": None, "error": f"{SUMMARY_KEY}: {e}"[:300]}
    covered = set(summary.shards)
    n = sum(1 for i in enhanced if i in covered)
    return {**out, "ran": True, "covered": n, "behind": len(enhanced) - n,
            "indexed_shards": len(covered), "duplicate_segments": summary.duplicate_segments,
            "duplicate_hours": round(summary.duplicate_seconds / 3600, 4),
            "clusters": summary.clusters, "bad_signatures": len(summary.bad_signatures),
            "finished_at": summary.finished_at}


def render_line(d: dict[str, Any]) -> str:
    if not d["ran"]:
        return (f"dedup: not run ({d['enhanced']} enhanced shards to index: `onsei dedup`)")
    if d["error"]:
        return f"dedup: result unreadable ({d['error']}); run `onsei dedup` again"
    pct = 100 * d["covered"] / d["enhanced"] if d["enhanced"] else 100.0
    line = (f"dedup index: {d['covered']}/{d['enhanced']} enhanced shards covered ({pct:.0f}%), "
            f"{d['behind']} behind; {d['duplicate_segments']} duplicates "
            f"({d['duplicate_hours']:.2f} h) in {d['clusters']} clusters")
    if d["bad_signatures"]:
        line += f"; {d['bad_signatures']} shards left out (bad signature files)"
    return line
