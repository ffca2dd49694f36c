"""services/tokenize/skipped.py: a done record lists the first skipped segments and tallies
all of them; readers count from the tally, and records written before it still read."""

from __future__ import annotations

from common.ledger.records import DoneRecord
from services.ops.report.quality import QualityData
from services.records import MAX_SKIPPED_ENTRIES, Quality, SkippedSegment
from services.tokenize.skipped import SkipLog, read_skipped
from services.tokenize.stats import TokenizeStats


def _entry(i: int, reasons: list[str], seconds: float = 2.0,
           quality: bool = True) -> SkippedSegment:
    return SkippedSegment(key=f"k_{i:04d}", reasons=reasons, seconds=seconds,
                          quality=Quality() if quality else None)


def _record(stats: dict) -> DoneRecord:
    return DoneRecord(stage="tokenize", shard_id=0, stats=stats)


def _stats(log: SkipLog) -> dict:
    """The stats block the stage writes for ``log``."""
    return TokenizeStats(skipped=log.entries, skipped_tally=log.tally).to_dict()


def test_entries_capped_tally_complete() -> None:
    log = SkipLog(cap=3)
    for i in range(10):
        log.add(_entry(i, ["dnsmos_ovrl<2", "duplicate_of:x_0001"] if i % 2 else ["multi_speaker"],
                       quality=i < 8))
    stats = _stats(log)
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
    q.add_skipped(read_skipped(_record(_stats(log))))
    d = q.as_dict()
    assert d["skipped_hours"] == 1.0 and d["skipped_hours_by_reason"] == {"multi_speaker": 1.0}
    assert d["annotated_hours"] == 1.0


def test_default_cap_bounds_the_written_record() -> None:
    log = SkipLog()
    n = MAX_SKIPPED_ENTRIES * 5
    for i in range(n):
        log.add(_entry(i, [f"duplicate_of:x_{i:05d}"] if i % 3 == 0 else ["music>0.5"]))
    text = _record(_stats(log)).to_json()
    got = read_skipped(DoneRecord.from_json(text))
    assert len(got.entries) == MAX_SKIPPED_ENTRIES
    dup = len(range(0, n, 3))
    assert got.tally.segments == n
    assert got.tally.segments_by_reason == {"duplicate_of": dup, "music>0.5": n - dup}
    # the record's size follows the cap, not the shard: five times the entries, one cap's worth
    one_cap = SkipLog()
    for i in range(MAX_SKIPPED_ENTRIES):
        one_cap.add(_entry(i, ["music>0.5"]))
    assert len(text) < 1.1 * len(_record(_stats(one_cap)).to_json())


def test_skipped_not_a_list_is_named() -> None:
    got = read_skipped(_record({"skipped": {"key": "k"}}))
    assert got.entries == [] and got.tally.segments == 0
    assert got.damaged == ["entries: not a list"]
