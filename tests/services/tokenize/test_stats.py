"""services/tokenize/stats.py: the tokenize done record's stats, written by the stage's model
and read back typed, old records included."""

from __future__ import annotations

import json

from common.ledger.records import DoneRecord
from services.records import SkippedSegment, SkipTally
from services.tokenize.filter import FilterPolicy
from services.tokenize.skipped import read_skipped
from services.tokenize.stats import FilterStats, SpeakersApplied, TokenizeStats

# a tokenize done record as written before the stats block, the tally and the newer filter
# rules: its figures at the top level, every skipped entry listed
OLD_RECORD = json.dumps({
    "stage": "tokenize", "shard_id": 12, "shard": "shard-000012", "counts": {"segments": 4},
    "batches": 2, "mean_batch": 1.5, "padding_waste": 0.02, "load_seconds": 3.1,
    "errors_sample": [{"key": "k_0003", "reason": "missing_audio"}],
    "quality_filter": {"multi_speaker": True, "min_ovrl": 2.0, "min_ovrl_delta": None,
                       "restoration_changed_text": False, "skipped_seconds": 5.0,
                       "by_reason": {"multi_speaker": 1, "duplicate_of": 1}},
    "skipped": [{"key": "k_0001", "reasons": ["multi_speaker"], "seconds": 2.0,
                 "quality": None},
                {"key": "k_0002", "reasons": ["duplicate_of:x_0009"], "seconds": 3.0,
                 "quality": None}]})


def test_old_record_reads() -> None:
    stats, damage = TokenizeStats.read(DoneRecord.from_json(OLD_RECORD))
    assert damage == []
    assert (stats.batches, stats.mean_batch, stats.errors_sample[0].reason) == (
        2, 1.5, "missing_audio")
    assert stats.skipped_tally is None and stats.corpus_speakers is None
    f = stats.quality_filter
    assert f is not None and f.by_reason == {"multi_speaker": 1, "duplicate_of": 1}
    # the policy as written: no key the old record lacks appears
    assert f.policy() == {"multi_speaker": True, "min_ovrl": 2.0, "min_ovrl_delta": None,
                          "restoration_changed_text": False}
    skipped = read_skipped(DoneRecord.from_json(OLD_RECORD))
    assert skipped.tally.segments_by_reason == {"multi_speaker": 1, "duplicate_of": 1}
    assert skipped.tally.seconds == 5.0


def test_written_block_keeps_its_keys_and_round_trips() -> None:
    policy = FilterPolicy()
    tally = SkipTally(segments=1, seconds=2.0, segments_by_reason={"multi_speaker": 1},
                      seconds_by_reason={"multi_speaker": 2.0})
    stats = TokenizeStats(
        batches=1, errors_sample=[{"key": None, "reason": "bad_json:x"}],
        quality_filter=FilterStats(**policy.describe(), skipped_seconds=2.0,
                                   by_reason=tally.segments_by_reason),
        corpus_speakers=SpeakersApplied(applied=False, labels=0),
        skipped=[SkippedSegment(key="k", reasons=["multi_speaker"], seconds=2.0)],
        skipped_tally=tally)
    block = stats.to_dict()
    assert set(block["quality_filter"]) == {*policy.describe(), "skipped_seconds", "by_reason"}
    assert block["errors_sample"] == [{"key": None, "reason": "bad_json:x"}]
    rec = DoneRecord.from_json(DoneRecord(stage="tokenize", shard_id=0, stats=block).to_json())
    back, damage = TokenizeStats.read(rec)
    assert damage == [] and back == stats
    assert back.quality_filter is not None
    assert back.quality_filter.policy() == {k: v for k, v in policy.describe().items()
                                            if k != "dedup"}


def test_no_filter_block_written_when_absent() -> None:
    assert "quality_filter" not in TokenizeStats().to_dict()
