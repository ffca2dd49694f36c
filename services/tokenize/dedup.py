"""The dedup result as tokenize reads it: once per shard, through the engine's output store.

Each shard reads ``dedup/summary.json`` (small); the summary names its list by SHA-256, so the
list itself (large on a big corpus) is read and parsed again only when the summary changed: a
worker tokenizing thousands of shards parses it once per ``onsei dedup`` run. A result that
cannot be read as the contract says (services/dedup/result.py) fails the shard with
:class:`DedupResultError`, naming the file: a segment is never skipped on a guess.
"""

from __future__ import annotations

from common.storage import NotFound, Store
from services.dedup.result import DUPLICATES_KEY, SUMMARY_KEY, DedupResult
from services.records import RecordError


class DedupResultError(RuntimeError):
    """The dedup result under the output root is unreadable or inconsistent."""


class DedupReader:
    """One per stage instance: the last result read, and what it was read from."""

    def __init__(self) -> None:
        self._summary: bytes | None = None
        self._result: DedupResult | None = None

    def load(self, store: Store) -> DedupResult | None:
        """The current result, or None when ``onsei dedup`` never ran on this output root."""
        try:
            summary = store.read_bytes(SUMMARY_KEY)
        except NotFound:
            self._summary = self._result = None
            return None
        if summary == self._summary:
            return self._result
        try:
            try:
                duplicates = store.read_bytes(DUPLICATES_KEY)
            except NotFound:
                duplicates = b""  # no duplicates: the summary's SHA-256 says whether it should be
            result = DedupResult.parse(summary, duplicates)
        except (RecordError, UnicodeDecodeError) as e:
            raise DedupResultError(f"dedup result {store.child_url(SUMMARY_KEY)} unusable: "
                                   f"{e}") from None
        self._summary, self._result = summary, result
        return result
