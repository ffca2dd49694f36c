"""The quality filter's skipped segments in a done record (tokenize's): the first
:data:`~services.records.MAX_SKIPPED_ENTRIES` entries (the report's charts sample them) and a
complete tally by reason (what every count reads), so a shard whose every segment is filtered
writes a bounded record and loses no count."""

from __future__ import annotations

from dataclasses import dataclass, field

from common.ledger.records import DoneRecord
from common.ledger.stats import Damage
from services.records import MAX_SKIPPED_ENTRIES, SkippedSegment, SkipTally, seconds_problem
from services.rules.policy import reason_kind
from services.rules.stats import FilterOutcome


class _Counts:
    """Running sums by reason kind (a segment with two reasons counts under both)."""

    def __init__(self) -> None:
        self.segments, self.seconds, self.annotated = 0, 0.0, 0.0
        self.by_count: dict[str, int] = {}
        self.by_seconds: dict[str, float] = {}

    def add(self, e: SkippedSegment) -> None:
        seconds = float(e.seconds)
        self.segments += 1
        self.seconds += seconds
        self.annotated += seconds if e.quality is not None else 0.0
        for kind in dict.fromkeys(reason_kind(r) for r in e.reasons):
            self.by_count[kind] = self.by_count.get(kind, 0) + 1
            self.by_seconds[kind] = self.by_seconds.get(kind, 0.0) + seconds

    def tally(self) -> SkipTally:
        return SkipTally(segments=self.segments, seconds=self.seconds,
                         seconds_annotated=self.annotated,
                         segments_by_reason=dict(self.by_count),
                         seconds_by_reason=dict(self.by_seconds))


def tally_of(entries: list[SkippedSegment]) -> SkipTally:
    counts = _Counts()
    for e in entries:
        counts.add(e)
    return counts.tally()


class SkipLog:
    """Collects a run's skipped segments: entries up to ``cap``, the tally of all."""

    def __init__(self, cap: int = MAX_SKIPPED_ENTRIES) -> None:
        self.cap = cap
        self.entries: list[SkippedSegment] = []
        self._counts = _Counts()

    def add(self, entry: SkippedSegment) -> None:
        if len(self.entries) < self.cap:
            self.entries.append(entry)
        self._counts.add(entry)

    @property
    def tally(self) -> SkipTally:
        return self._counts.tally()


@dataclass
class Skipped:
    """A done record's skipped segments as read: ``damaged`` names what could not be."""

    entries: list[SkippedSegment] = field(default_factory=list)
    tally: SkipTally = field(default_factory=SkipTally)
    damaged: list[str] = field(default_factory=list)


def read_skipped(rec: DoneRecord) -> Skipped:
    """The entries that read and the tally; a record written before the tally has every
    entry, so its tally is theirs."""
    return skipped_of(*FilterOutcome.read(rec))


def skipped_of(stats: FilterOutcome, damage: list[Damage]) -> Skipped:
    """:func:`read_skipped` from stats already read (``damage``: what of them did not)."""
    out = Skipped()
    for d in damage:
        if d.field == "skipped" and d.index is not None:
            out.damaged.append("entry: not a skipped segment")
        elif d.field == "skipped":
            out.damaged.append("entries: not a list")
        elif d.field == "skipped_tally":
            out.damaged.append("tally: unreadable, counted from the entries")
    for entry in stats.skipped:
        why = seconds_problem(entry.seconds)
        if why is not None:
            out.damaged.append(f"entry: {why}")
            continue
        out.entries.append(entry)
    out.tally = stats.skipped_tally or tally_of(out.entries)
    return out
