"""services/tokenize/skipped.py: a done record lists the first skipped segments and tallies
all of them; readers count from the tally, and records written before it still read."""

from __future__ import annotations

from common.ledger.records import DoneRecord
from services.ops.report.quality import QualityData
from services.records import Quality, SkippedSegment
from services.tokenize.skipped import SkipLog, read_skipped


def _entry(i: int, reasons: list[str], seconds: float = 2.0,
           quality: bool = True) -> SkippedSegment:
    return SkippedSegment(key=f"k_{i:04d}", reasons=reasons, seconds=seconds,
                          quality=Quality() if quality else None)


def _record(stats: dict) -> DoneRecord:
    return DoneRecord(stage="tokenize", shard_id=0, stats=stats)


def test_entries_capped_tally_complete() -> None:
    log = SkipLog(cap=3)
    for i in range(10):
        log.add(_entry(i, ["dnsmos_ovrl<2", "duplicate_of:x_0001"] if i % 2 else ["multi_speaker"],
                       quality=i < 8))
    stats = log.stats()
    assert [e["key"] for e in stats["skipped"]] == ["k_0000", "k_0001", "k_0002"]
    got = read_skipped(_record(stats))
    assert got.damaged == [] and len(got.entries) == 3
    t = got.tally
    assert (t.segments, t.seconds, t.seconds_annotated) == (10, 20.0, 16.0)
    assert t.segments_by_reason == {"multi_speaker": 5, "dnsmos_ovrl<2": 5, "duplicate_of": 5}
    assert t.seconds_by_reason == {"multi_speaker": 10.0, "dnsmos_ovrl<2": 10.0,
                                   "duplicate_of": 10.0}


def test_record_before_the_tally_counts_its_entries() -> None:
    old = _record({"skipped": [_entry(0, ["multi_speaker"]).to_dict(),
                               {"key": "bad", "reasons": "not a list"},
                               _entry(1, ["multi_speaker"], seconds=-5).to_dict()]})
    got = read_skipped(old)
    assert got.tally.segments == 1 and got.tally.segments_by_reason == {"multi_speaker": 1}
    assert got.damaged == ["entry: not a skipped segment", "entry: duration_seconds negative"]


def test_unreadable_tally_is_named_and_the_entries_count() -> None:
    rec = _record({"skipped": [_entry(0, ["x"]).to_dict()],
                   "skipped_tally": {"segments": -1}})
    got = read_skipped(rec)
    assert got.tally.segments == 1
    assert got.damaged == ["tally: unreadable, counted from the entries"]


def test_report_hours_come_from_the_tally() -> None:
    log = SkipLog(cap=1)
    for i in range(4):
        log.add(_entry(i, ["multi_speaker"], seconds=900.0))
    q = QualityData()
    q.add_skipped(read_skipped(_record(log.stats())))
    d = q.as_dict()
    assert d["skipped_hours"] == 1.0 and d["skipped_hours_by_reason"] == {"multi_speaker": 1.0}
    assert d["annotated_hours"] == 1.0
