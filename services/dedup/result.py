"""The result of ``onsei dedup`` as its consumers read it: which segments are duplicates of
which, and which shards the result covers.

Two objects under the output root, published whole, the summary last:

- ``dedup/duplicates.jsonl``: one :class:`DuplicateLine` per segment judged a duplicate;
- ``dedup/summary.json``: the :class:`DedupSummary`, with the shards the result covers and the
  SHA-256 of the duplicates file it belongs to, so a reader never pairs a new list with an old
  summary (a mismatch reads as no result, and says so).

A consumer applies the list only to shards the summary covers: a shard enhanced after the last
``onsei dedup`` has not been matched against the corpus yet.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from pydantic import Field

from common.storage import NotFound, Store
from services.records import Record, RecordError

DEDUP_DIR = "dedup"
DUPLICATES_KEY = f"{DEDUP_DIR}/duplicates.jsonl"
SUMMARY_KEY = f"{DEDUP_DIR}/summary.json"


class DuplicateLine(Record):
    """A segment judged a copy of ``duplicate_of`` (the copy kept). ``kind``: how it was
    matched (e.g. ``same_recording``); ``score``: the match's confidence in [0, 1];
    ``seconds``: the duplicate's duration."""

    id: str
    duplicate_of: str
    kind: str
    score: float
    seconds: float = 0.0


class Cluster(Record):
    """One group of copies: the one kept, how many copies (kept one included), their hours."""

    keep: str
    size: int
    seconds: float = 0.0
    text: str = ""


class DedupSummary(Record):
    """``shards``: the shard ids indexed so far (the result covers exactly these);
    ``bad_signatures``: shards left out, each with why (missing or corrupt signature file)."""

    shards: list[int] = Field(default_factory=list)
    segments: int = 0
    clusters: int = 0
    duplicate_segments: int = 0
    duplicate_seconds: float = 0.0
    largest: list[Cluster] = Field(default_factory=list)
    bad_signatures: dict[str, str] = Field(default_factory=dict)
    duplicates_sha256: str = ""
    finished_at: float = 0.0


@dataclass
class DedupResult:
    summary: DedupSummary
    duplicates: dict[str, DuplicateLine] = field(default_factory=dict)
    _covered: frozenset[int] = frozenset()

    def covers(self, shard_id: int) -> bool:
        return shard_id in self._covered

    def duplicate_of(self, segment_id: str) -> DuplicateLine | None:
        return self.duplicates.get(segment_id)

    @classmethod
    def parse(cls, summary: bytes, duplicates: bytes) -> DedupResult:
        """Both objects as read; raises :class:`RecordError` when they do not belong together
        or a line is not a :class:`DuplicateLine`."""
        s = DedupSummary.from_json(summary)
        if hashlib.sha256(duplicates).hexdigest() != s.duplicates_sha256:
            raise RecordError(f"{DUPLICATES_KEY} does not match {SUMMARY_KEY} (a run in progress "
                              "or an edited file): run `onsei dedup` again")
        dups = {}
        for n, line in enumerate(duplicates.splitlines(), 1):
            if line.strip():
                try:
                    d = DuplicateLine.from_json(line)
                except RecordError as e:
                    raise RecordError(f"{DUPLICATES_KEY} line {n}: {e}") from None
                dups[d.id] = d
        return cls(s, dups, frozenset(s.shards))

    @classmethod
    def load(cls, store: Store) -> DedupResult | None:
        """The current result, or None when ``onsei dedup`` has not run on this output root."""
        try:
            summary = store.read_bytes(SUMMARY_KEY)
        except NotFound:
            return None
        try:
            duplicates = store.read_bytes(DUPLICATES_KEY)
        except NotFound:
            duplicates = b""
        return cls.parse(summary, duplicates)
