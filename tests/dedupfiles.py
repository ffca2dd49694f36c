"""A dedup result written as ``onsei dedup`` publishes it (services/dedup/result.py): the
consumers' tests write these two files directly, independent of how the matcher works."""

from __future__ import annotations

import hashlib
from typing import Any

from common.storage import Store
from services.dedup.result import DUPLICATES_KEY, SUMMARY_KEY, Cluster, DedupSummary
from services.dedup.result import DuplicateLine as Line


def write_result(store: Store, duplicates: dict[str, str], shards: list[int],
                 seconds: dict[str, float] | None = None,
                 largest: list[Cluster] | None = None, segments: int = 0,
                 bad: dict[str, str] | None = None,
                 fields: dict[str, dict[str, Any]] | None = None) -> DedupSummary:
    """``duplicates``: segment id -> id of the copy kept; ``shards``: the ones covered;
    ``fields``: segment id -> more of its line (``rank``, ``quality``, ``keep_quality``)."""
    seconds = seconds or {}
    fields = fields or {}
    lines = "".join(Line(id=d, duplicate_of=k, kind="same_recording", score=0.97,
                         seconds=seconds.get(d, 1.0), **fields.get(d, {})).to_json() + "\n"
                    for d, k in duplicates.items()).encode()
    s = DedupSummary(shards=shards, segments=segments, bad_signatures=bad or {},
                     clusters=len(set(duplicates.values())),
                     duplicate_segments=len(duplicates),
                     duplicate_seconds=sum(seconds.get(d, 1.0) for d in duplicates),
                     largest=largest or [], duplicates_sha256=hashlib.sha256(lines).hexdigest(),
                     finished_at=1.0)
    store.write_bytes(DUPLICATES_KEY, lines)
    store.write_bytes(SUMMARY_KEY, s.to_json().encode())
    return s
