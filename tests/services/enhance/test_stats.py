"""services/enhance/stats.py: the enhance done record's stats read typed, old records
included."""

from __future__ import annotations

from common.ledger.records import DoneRecord
from services.enhance.stats import EnhanceStats, QualityStats


def test_old_record_before_the_speaker_figures() -> None:
    old = DoneRecord.from_json(
        '{"stage": "enhance", "shard_id": 5, "padded_fraction": 0.01, "batch_size": 8, '
        '"errors": [{"key": null, "reason": "asr_line_3_malformed: x"}, '
        '{"key": "k_0002", "reason": "undecodable"}], '
        '"quality": {"annotated": 4, "multi_speaker": 1, "mean_ovrl_after": 3.1}}')
    stats, damage = EnhanceStats.read(old)
    assert damage == []
    assert [e.key for e in stats.errors] == [None, "k_0002"]
    assert stats.quality == QualityStats(annotated=4, multi_speaker=1, mean_ovrl_after=3.1)


def test_no_quality_block_when_annotations_are_off() -> None:
    block = EnhanceStats(batch_size=4).to_dict()
    assert "quality" not in block and block["errors"] == []
