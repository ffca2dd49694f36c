"""The result of ``onsei dedup`` as its consumers read it: which segments are duplicates of
which, and which shards the result covers.

Two objects under the output root, published whole, the summary last:

- ``dedup/duplicates.jsonl``: one :class:`DuplicateLine` per segment judged a duplicate;
- ``dedup/summary.json``: the :class:`DedupSummary`, with the shards the result covers and the
  SHA-256 of the duplicates file it belongs to, so a reader never pairs a new list with an old
  summary (a mismatch reads as no result, and says so).

A consumer applies the list only to shards the summary covers: a shard enhanced after the last
``onsei dedup`` has not been matched against the corpus yet.

Ids are corpus ids (``services.records.corpus_id``: ``<segment id>@<shard>``): two shards may
hold the same member keys. A list written before them names segments within their shards; it
is still read (a lookup by corpus id falls back to the bare id), ambiguous as it was then.

Each copy not kept carries its ``rank`` in its recording's order and the quality blocks of itself
and of the copy kept, so a consumer whose filter policy differs from the one ``onsei dedup`` ran
with decides again (:meth:`DedupResult.kept_instead`): of each recording, the first copy in that
order its policy passes is the one it keeps, whoever reads it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pydantic import Field

from common.record import omitted
from common.storage import NotFound, Store
from services.records import Quality, Record, RecordError, corpus_id, local_name

if TYPE_CHECKING:
    from services.dedup.index import Copy

DEDUP_DIR = "dedup"
DUPLICATES_KEY = f"{DEDUP_DIR}/duplicates.jsonl"
SUMMARY_KEY = f"{DEDUP_DIR}/summary.json"


class DuplicateLine(Record):
    """A segment judged a copy of ``duplicate_of`` (the copy kept). ``kind``: how it was
    matched (e.g. ``same_recording``); ``score``: the match's confidence in [0, 1];
    ``seconds``: the duplicate's duration; ``rank``: its place in the recording's order (the
    copy kept is 0); ``quality`` / ``keep_quality``: the filterable blocks of it and of the copy
    kept (absent: unknown, or a list written before them)."""

    id: str
    duplicate_of: str
    kind: str
    score: float
    seconds: float = 0.0
    rank: int | None = omitted()
    quality: Quality | None = omitted()
    keep_quality: Quality | None = omitted()


def copy_line(kind: str, c: Copy) -> DuplicateLine:
    """A copy not kept (the index's row) as the list has it, by corpus ids."""
    return DuplicateLine(id=corpus_id(c.id, c.shard), duplicate_of=corpus_id(c.keep, c.keep_shard),
                         kind=kind, score=round(c.score, 4), seconds=round(c.seconds, 3),
                         rank=c.rank, quality=read_quality(c.quality),
                         keep_quality=read_quality(c.keep_quality))


def _json(q: Quality | None) -> str | None:
    return None if q is None else q.to_json()


def read_quality(text: str | None) -> Quality | None:
    """A signature file's quality JSON (None, or one that does not read: unknown; enhance
    writes it from a checked record)."""
    try:
        return None if text is None else Quality.from_json(text)
    except RecordError:
        return None


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
    # id kept -> the copies not kept, in rank order (built on first use)
    _copies: dict[str, list[DuplicateLine]] | None = None
    # id -> its line's quality and keep_quality as JSON: the lines in ``duplicates`` are held
    # without them (two parsed blocks cost ~8 KB a line, their JSON ~0.8 KB; the whole list is
    # in each tokenize worker's memory), and a block is parsed when a consumer decides again
    _qualities: dict[str, tuple[str | None, str | None]] = field(default_factory=dict)

    def covers(self, shard_id: int) -> bool:
        return shard_id in self._covered

    def duplicate_of(self, segment_id: str) -> DuplicateLine | None:
        """The line of a corpus id (or, in a list written before them, of its bare id)."""
        d = self.duplicates.get(segment_id)
        return d if d is not None else self.duplicates.get(local_name(segment_id))

    def kept_instead(self, segment_id: str,
                     passes: Callable[[Quality | None], bool]) -> str | None:
        """The copy of ``segment_id``'s recording kept instead of it under a filter policy
        (``passes``: its verdict on a quality block, None when unknown): the first in rank
        order that passes, or None when that is this one or comes after it (this one is then
        the recording's copy kept: it is exported if it passes itself)."""
        d = self.duplicate_of(segment_id)
        if d is None:
            return None
        if passes(self.qualities(d.id)[1]):
            return d.duplicate_of
        for other in self._ranked(d.duplicate_of):
            if other is d:
                return None
            if passes(self.qualities(other.id)[0]):
                return other.id
        return None

    def qualities(self, line_id: str) -> tuple[Quality | None, Quality | None]:
        """A listed copy's ``quality`` and ``keep_quality`` (None: unknown)."""
        q, k = self._qualities.get(line_id, (None, None))
        return read_quality(q), read_quality(k)

    def _ranked(self, keep: str) -> list[DuplicateLine]:
        if self._copies is None:
            copies: dict[str, list[DuplicateLine]] = {}
            for line in self.duplicates.values():
                copies.setdefault(line.duplicate_of, []).append(line)
            for lines in copies.values():
                lines.sort(key=lambda x: (x.rank is None, x.rank or 0, x.id))
            self._copies = copies
        return self._copies.get(keep, [])

    @classmethod
    def parse(cls, summary: bytes, duplicates: bytes) -> DedupResult:
        """Both objects as read; raises :class:`RecordError` when they do not belong together
        or a line is not a :class:`DuplicateLine`."""
        s = DedupSummary.from_json(summary)
        if hashlib.sha256(duplicates).hexdigest() != s.duplicates_sha256:
            raise RecordError(f"{DUPLICATES_KEY} does not match {SUMMARY_KEY} (a run in progress "
                              "or an edited file): run `onsei dedup` again")
        dups = {}
        qualities = {}
        for n, line in enumerate(duplicates.splitlines(), 1):
            if line.strip():
                try:
                    d = DuplicateLine.from_json(line)
                except RecordError as e:
                    raise RecordError(f"{DUPLICATES_KEY} line {n}: {e}") from None
                if d.quality is not None or d.keep_quality is not None:
                    qualities[d.id] = (_json(d.quality), _json(d.keep_quality))
                    d = d.model_copy(update={"quality": None, "keep_quality": None})
                dups[d.id] = d
        return cls(s, dups, frozenset(s.shards), _qualities=qualities)

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
