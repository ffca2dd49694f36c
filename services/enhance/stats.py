"""The enhance done record's ``stats`` block, typed (common/ledger/stats.py). With a filter
rule on the input audio in force (services/enhance/early.py), what it dropped before restoration
in the shape tokenize writes what it skips (services/rules/stats.py)."""

from __future__ import annotations

from pydantic import Field

from common.ledger.stats import ErrorEntry
from common.record import Record, omitted
from services.records import SkippedSegment
from services.rules.stats import FilterOutcome

__all__ = ["EnhanceStats", "QualityStats"]


class QualityStats(Record):
    """Shard totals of the quality annotations (the steps' ``QualityTally``, tally.py)."""

    annotated: int = 0
    multi_speaker: int = 0
    fidelity_checked: int = 0
    restoration_changed_text: int = 0
    mean_ovrl_before: float = 0.0
    mean_ovrl_after: float = 0.0
    speaker_files: int = 0
    speakers: int = 0
    cut_segments: int = 0
    speaker_changes: int = 0
    overlap_trimmed: int = 0  # pieces trimmed at edges where two voices overlap (edges.py)
    overlap_dropped: int = 0
    overlap_trimmed_words: int = 0
    seconds: float = 0.0  # spent annotating


class EnhanceStats(FilterOutcome):
    padded_fraction: float = 0.0  # of the model's input, filler silence
    overhead_fraction: float = 0.0  # of the model's input, not kept: filler and context
    decode_seconds: float = 0.0
    chunk_seconds: float = 0.0
    context_seconds: float = 0.0
    batch_size: int = 0
    errors: list[ErrorEntry] = Field(default_factory=list)  # the first errors
    quality: QualityStats | None = omitted()  # None (not written): annotations off
    # the segments dropped before restoration (none: not written; quality_filter and
    # skipped_tally are absent then too)
    skipped: list[SkippedSegment] = Field(default_factory=list, exclude_if=lambda v: not v)
