"""The duplicates in a run (``onsei report``): hours, clusters, the largest with their text,
from the dedup result (services/dedup/result.py), and how many segments tokenize left out as
copies. A result that cannot be read is shown as such; the rest of the report goes on."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from html import escape
from typing import Any

from common.storage import StorageError, Store
from services.dedup.result import SUMMARY_KEY, Cluster, DedupResult
from services.records import RecordError

TOP_CLUSTERS = 10


@dataclass
class DedupData:
    ran: bool = False
    error: str | None = None
    shards: int = 0  # shards the result covers
    segments: int = 0  # segments indexed
    clusters: int = 0
    duplicate_segments: int = 0
    duplicate_seconds: float = 0.0
    largest: list[Cluster] = field(default_factory=list)
    bad_signatures: dict[str, str] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"ran": self.ran, "error": self.error, "shards": self.shards,
                "segments": self.segments, "clusters": self.clusters,
                "duplicate_segments": self.duplicate_segments,
                "duplicate_hours": self.duplicate_seconds / 3600,
                "largest": [c.to_dict() for c in self.largest],
                "bad_signatures": self.bad_signatures}


def collect_dedup(store: Store) -> DedupData:
    try:
        result = DedupResult.load(store)
    except (RecordError, StorageError) as e:
        return DedupData(ran=True, error=f"{SUMMARY_KEY}: {e}"[:300])
    if result is None:
        return DedupData()
    s = result.summary
    largest = sorted(s.largest, key=lambda c: (-c.size, -c.seconds, c.keep))[:TOP_CLUSTERS]
    return DedupData(ran=True, shards=len(s.shards), segments=s.segments, clusters=s.clusters,
                     duplicate_segments=s.duplicate_segments,
                     duplicate_seconds=s.duplicate_seconds, largest=largest,
                     bad_signatures=dict(s.bad_signatures))


def text_lines(d: DedupData) -> list[str]:
    if not d.ran:
        return ["  dedup     not run"]
    if d.error:
        return [f"  dedup     result unreadable: {d.error}"]
    out = [(f"  dedup     {d.duplicate_segments} duplicate segments "
           f"({d.duplicate_seconds / 3600:.3f} h) in {d.clusters} clusters, "
           f"{d.shards} shards indexed")]
    out += [f"    {c.size:>5} copies  {c.seconds / 3600:8.3f} h  {c.text[:60]!r}"
            for c in d.largest]
    if d.bad_signatures:
        out.append(f"    {len(d.bad_signatures)} shards left out: "
                   + ", ".join(f"{k} ({v})" for k, v in sorted(d.bad_signatures.items())[:5]))
    return out


def html_section(d: DedupData, table: Callable[[list[str], list[list[object]]], str]) -> str:
    """``table``: services.ops.report.render's table writer (headers, rows, left columns)."""
    if not d.ran:
        return "<p id=\"dedup\">`onsei dedup` has not run on this output root.</p>"
    if d.error:
        return f'<p id="dedup" class="bad">Dedup result unreadable: {escape(d.error)}</p>'
    html = (f'<p id="dedup">{d.duplicate_segments} duplicate segments '
            f"({d.duplicate_seconds / 3600:.3g} h) in {d.clusters} clusters; "
            f"{d.segments} segments of {d.shards} shards indexed.</p>")
    if d.largest:
        html += table(["kept copy", "copies", "hours", "text"],
                      [[c.keep, c.size, c.seconds / 3600, c.text[:200]] for c in d.largest])
    if d.bad_signatures:
        html += "<p class=bad>Shards left out (signature files): " + escape(", ".join(
            f"{k}: {v}" for k, v in sorted(d.bad_signatures.items()))) + "</p>"
    return html
