"""services/asr/stats.py: the asr done record's stats read typed, old records included."""

from __future__ import annotations

from common.ledger.records import DoneRecord
from services.asr.stats import AsrStats


def test_old_record_with_top_level_figures() -> None:
    old = DoneRecord.from_json('{"stage": "asr", "shard_id": 3, "counts": {"files": 2}, '
                               '"languages": {"ja": 2}, "decode_wait_seconds": 0.5}')
    stats, damage = AsrStats.read(old)
    assert damage == []
    assert (stats.languages, stats.decode_wait_seconds, stats.text_seconds) == ({"ja": 2}, 0.5,
                                                                                0.0)


def test_a_language_count_not_a_number_is_named() -> None:
    rec = DoneRecord(stage="asr", shard_id=0, stats={"languages": {"ja": "2"},
                                                     "text_seconds": 1.25})
    stats, damage = AsrStats.read(rec)
    assert stats.languages == {} and stats.text_seconds == 1.25
    assert [d.field for d in damage] == ["languages"]
