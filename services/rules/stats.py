"""What a done record says of the filter, typed (common/ledger/stats.py): the policy in force
and what it removed (``quality_filter``), the first skipped segments and the tally of every
one. Tokenize's stats hold it (services/tokenize/stats.py); ``onsei export`` and
``onsei report`` read it without importing the stage."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from common.ledger.stats import StageStats
from common.record import Record, omitted
from services.records import SkippedSegment, SkipTally

__all__ = ["DedupSeen", "FilterOutcome", "FilterStats"]


class DedupSeen(Record):
    """The dedup result the filter saw: its duplicate list's digest, and whether it applied
    (it covered the shard and duplicates are filtered)."""

    duplicates_sha256: str
    applied: bool


class FilterStats(Record):
    """The quality filter for the shard: its policy (``FilterPolicy.describe()``; a key a
    record was written without stays absent, see :meth:`policy`) and what it removed."""

    multi_speaker: bool | None = None
    min_ovrl: float | None = None
    min_ovrl_delta: float | None = None
    restoration_changed_text: bool | None = None
    duplicates: bool | None = None
    min_speech_fraction: float | None = None
    max_music: float | None = None
    max_overlap: float | None = None
    dedup: DedupSeen | None = None  # None: no dedup result existed
    skipped_seconds: float = 0.0
    by_reason: dict[str, int] = Field(default_factory=dict)  # segments by reason kind

    def policy(self) -> dict[str, Any]:
        """The rules in force as the record has them (the figures and the dedup result
        apart): what two shards compare to tell whether one policy filtered both."""
        return self.model_dump(exclude_unset=True,
                               exclude={"dedup", "skipped_seconds", "by_reason"})


class FilterOutcome(StageStats):
    """The filter's part of a stage's stats block."""

    quality_filter: FilterStats | None = omitted()
    # the first skipped segments (MAX_SKIPPED_ENTRIES) and the tally of every one; a record
    # written before the tally has every entry and no tally
    skipped: list[SkippedSegment] = Field(default_factory=list)
    skipped_tally: SkipTally | None = omitted()
