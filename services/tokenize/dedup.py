"""The dedup result as tokenize reads it: once per shard, through the engine's output store.

Each shard reads ``dedup/summary.json`` (small) and the duplicate list's identity (one HEAD);
the list itself (large on a big corpus) is read and parsed again only when either changed, so a
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
        self._key: tuple[bytes, str] | None = None
        self._result: DedupResult | None = None

    def load(self, store: Store) -> DedupResult | None:
        """The current result, or None when ``onsei dedup`` never ran on this output root."""
        try:
            summary = store.read_bytes(SUMMARY_KEY)
        except NotFound:
            self._key = self._result = None
            return None
        try:
            ident = store.identity(DUPLICATES_KEY)
        except NotFound:
            ident = ""
        if self._key == (summary, ident):
            return self._result
        try:
            duplicates = store.read_bytes(DUPLICATES_KEY) if ident else b""
            result = DedupResult.parse(summary, duplicates)
        except (RecordError, NotFound, UnicodeDecodeError) as e:
            raise DedupResultError(f"dedup result {store.child_url(SUMMARY_KEY)} unusable: "
                                   f"{e}") from None
        self._key, self._result = (summary, ident), result
        return result
