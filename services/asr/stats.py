"""The asr done record's ``stats`` block, typed (common/ledger/stats.py)."""

from __future__ import annotations

from pydantic import Field

from common.ledger.stats import StageStats

__all__ = ["AsrStats"]


class AsrStats(StageStats):
    languages: dict[str, int] = Field(default_factory=dict)  # kept files by language
    decode_wait_seconds: float = 0.0  # waited on the read-ahead decoder
    text_seconds: float = 0.0  # spent on the spoken forms (services/text)
