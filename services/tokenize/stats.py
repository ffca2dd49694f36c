"""The tokenize done record's ``stats`` block, typed (common/ledger/stats.py): batching, the
quality filter in force and what it removed (services/rules/stats.py), the corpus speaker
labels applied, an error sample."""

from __future__ import annotations

from pydantic import Field

from common.ledger.stats import ErrorEntry
from common.record import Record, omitted
from services.rules.stats import DedupSeen, FilterOutcome, FilterStats

__all__ = ["DedupSeen", "FilterStats", "SpeakersApplied", "TokenizeStats"]


class SpeakersApplied(Record):
    """Whether the corpus speaker labels applied to the shard, and how many it had."""

    applied: bool = False
    labels: int = Field(0, ge=0)


class TokenizeStats(FilterOutcome):
    batches: int = Field(0, ge=0)
    mean_batch: float = 0.0  # segments per batch
    padding_waste: float = 0.0  # share of the encoded frames that were padding
    load_seconds: float = 0.0  # the codec's load
    errors_sample: list[ErrorEntry] = Field(default_factory=list)  # the first errors
    corpus_speakers: SpeakersApplied | None = omitted()
