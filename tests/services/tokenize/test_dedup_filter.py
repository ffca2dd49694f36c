"""Tokenize skips the segments ``onsei dedup`` listed as copies (``duplicate_of:<id>``), only
in shards its result covers; a corrupt result fails the shard and names the file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from common.stages.engine import Engine
from common.storage import open_store
from services.dedup.result import DUPLICATES_KEY, SUMMARY_KEY, DedupResult
from services.stages import PIPELINE, output_key
from services.tokenize.dedup import DedupReader
from services.tokenize.filter import FilterPolicy, reason_kind
from services.tokenize.stage import TokenizeStage
from tests.dedupfiles import write_result
from tests.services.tokenize.conftest import write_enhanced_tar

SEGS = [("a_0000", 0.6, "one"), ("a_0001", 0.7, "two"), ("b_0000", 0.6, "one")]


def test_policy_applies_the_list_only_to_covered_shards(tmp_path: Path) -> None:
    store = open_store(str(tmp_path))
    write_result(store, {"b_0000": "a_0000"}, shards=[3])
    result = DedupResult.load(store)
    covered = FilterPolicy(multi_speaker=True).for_shard(result, 3)
    assert covered.reasons(None, "b_0000") == ["duplicate_of:a_0000"]
    assert covered.reasons({"multi_speaker": True}, "b_0000") == [
        "multi_speaker", "duplicate_of:a_0000"]
    assert covered.reasons(None, "a_0000") == []  # the copy kept
    assert FilterPolicy().for_shard(result, 4).reasons(None, "b_0000") == []  # not matched yet
    off = FilterPolicy(duplicates=False).for_shard(result, 3)
    assert off.reasons(None, "b_0000") == []
    assert off.describe()["dedup"] == {"duplicates_sha256": result.summary.duplicates_sha256,
                                       "applied": False}
    assert FilterPolicy().for_shard(None, 3).describe()["dedup"] is None
    assert reason_kind("duplicate_of:a_0000") == "duplicate_of"
    assert reason_kind("multi_speaker") == "multi_speaker"


def _run(make_settings, codec, shard: int, **kw):
    s = make_settings(tokenize_neucodec_model=str(codec.directory), tokenize_device="cpu", **kw)
    write_enhanced_tar(Path(s.output_url) / output_key("enhance", s, shard), SEGS)
    stage = TokenizeStage(s)
    stage.codec = codec
    return s, Engine(s, PIPELINE, stage)


def _fields(rec) -> dict:
    """The done record's stage figures, typed record (``stats`` block) or plain dict alike."""
    d = rec if isinstance(rec, dict) else rec.to_dict()
    return {**d, **(d.get("stats") or {})}


def _ids(s, shard: int) -> list[str]:
    out = Path(s.output_url) / "tokens" / "neucodec" / f"shard-{shard:06d}.jsonl"
    return [json.loads(x)["id"] for x in out.read_text().splitlines()]


def test_stage_skips_listed_copies_in_covered_shards(make_settings, codec) -> None:
    s, engine = _run(make_settings, codec, 3)
    write_enhanced_tar(Path(s.output_url) / output_key("enhance", s, 4), SEGS)
    sha = write_result(engine.output, {"b_0000": "a_0000"}, shards=[3]).duplicates_sha256
    rec = _fields(engine.run(3).record)
    assert _ids(s, 3) == ["a_0000", "a_0001"]
    assert rec["skipped"] == [{"key": "b_0000", "reasons": ["duplicate_of:a_0000"],
                               "seconds": 0.6, "quality": None}]
    f = rec["quality_filter"]
    assert f["by_reason"] == {"duplicate_of": 1}
    assert f["dedup"] == {"duplicates_sha256": sha, "applied": True}
    rec4 = _fields(engine.run(4).record)  # enhanced after the last `onsei dedup`: not matched, kept
    assert _ids(s, 4) == ["a_0000", "a_0001", "b_0000"]
    assert rec4["skipped"] == [] and rec4["quality_filter"]["dedup"]["applied"] is False


def test_no_result_keeps_everything(make_settings, codec) -> None:
    s, engine = _run(make_settings, codec, 3)
    rec = _fields(engine.run(3).record)
    assert _ids(s, 3) == ["a_0000", "a_0001", "b_0000"]
    assert rec["quality_filter"]["dedup"] is None


@pytest.mark.parametrize("damage", ["edited_list", "bad_line", "bad_summary"])
def test_corrupt_result_fails_the_shard_and_names_it(make_settings, codec, damage) -> None:
    s, engine = _run(make_settings, codec, 3)
    write_result(engine.output, {"b_0000": "a_0000"}, shards=[3])
    if damage == "edited_list":
        engine.output.write_bytes(DUPLICATES_KEY, b"")
    elif damage == "bad_line":  # a line that is no DuplicateLine, with the sha to match
        import hashlib

        body = b'{"id": "b_0000"}\n'
        summary = json.loads(engine.output.read_bytes(SUMMARY_KEY))
        summary["duplicates_sha256"] = hashlib.sha256(body).hexdigest()
        engine.output.write_bytes(DUPLICATES_KEY, body)
        engine.output.write_bytes(SUMMARY_KEY, json.dumps(summary).encode())
    else:
        engine.output.write_bytes(SUMMARY_KEY, b"{not json")
    attempt = engine.attempt(3)
    assert attempt.status == "failed"
    assert "DedupResultError" in attempt.reason and SUMMARY_KEY in attempt.reason
    failure = json.loads(engine.output.read_bytes(engine.ledger.failed_key("tokenize", 3)))
    assert SUMMARY_KEY in failure["reason"]
    assert not engine.ledger.is_done("tokenize", 3)
    assert not (Path(s.output_url) / "tokens" / "neucodec" / "shard-000003.jsonl").exists()


class CountingStore:
    """A store that counts reads of each key (the rest passes through)."""

    def __init__(self, store) -> None:
        self.store, self.reads = store, {}

    def read_bytes(self, key: str) -> bytes:
        self.reads[key] = self.reads.get(key, 0) + 1
        return self.store.read_bytes(key)

    def __getattr__(self, name: str):
        return getattr(self.store, name)


def test_the_list_is_parsed_once_per_dedup_run(tmp_path: Path) -> None:
    store = CountingStore(open_store(str(tmp_path)))
    reader = DedupReader()
    assert reader.load(store) is None
    write_result(store.store, {"b_0000": "a_0000"}, shards=[1])
    first = reader.load(store)
    assert reader.load(store) is first and reader.load(store) is first  # three shards
    assert store.reads == {SUMMARY_KEY: 4, DUPLICATES_KEY: 1}
    write_result(store.store, {"b_0000": "a_0000", "a_0001": "a_0000"}, shards=[1, 2])
    again = reader.load(store)
    assert again is not first and again.covers(2) and again.duplicate_of("a_0001")
    assert store.reads[DUPLICATES_KEY] == 2


def test_ids_are_corpus_ids_and_a_filtered_copy_kept_hands_on_to_the_next(tmp_path: Path) -> None:
    """One recording in shards 0, 1, 2 under one key. The list names each copy by corpus id
    (a key two shards share is two segments). The copy dedup kept (shard 0) fails this
    policy: the first copy in rank order that passes (shard 1) is kept instead, the one after
    it (shard 2) is its duplicate; with every copy passing, the list applies as written."""
    from services.records import Quality

    store = open_store(str(tmp_path))
    flagged = Quality(multi_speaker=True).to_dict()
    clean = Quality(multi_speaker=False).to_dict()
    write_result(store, {"s_0000@000001": "s_0000@000000", "s_0000@000002": "s_0000@000000"},
                 shards=[0, 1, 2],
                 fields={"s_0000@000001": {"rank": 1, "quality": clean, "keep_quality": flagged},
                         "s_0000@000002": {"rank": 2, "quality": clean,
                                           "keep_quality": flagged}})
    result = DedupResult.load(store)

    def reasons(policy: FilterPolicy, shard: int, quality: dict | None) -> list[str]:
        return policy.for_shard(result, shard).reasons(quality, "s_0000")

    strict = FilterPolicy(multi_speaker=True)
    assert reasons(strict, 0, flagged) == ["multi_speaker"]
    assert reasons(strict, 1, clean) == []  # exported instead of the filtered copy kept
    assert reasons(strict, 2, clean) == ["duplicate_of:s_0000@000001"]
    lenient = FilterPolicy(multi_speaker=False)
    assert reasons(lenient, 0, flagged) == []
    assert reasons(lenient, 1, clean) == ["duplicate_of:s_0000@000000"]
    assert reasons(lenient, 2, clean) == ["duplicate_of:s_0000@000000"]
    # a list written before corpus ids names segments within their shards: still applied
    write_result(store, {"b_0000": "a_0000"}, shards=[3])
    old = DedupResult.load(store)
    assert FilterPolicy().for_shard(old, 3).reasons(None, "b_0000") == ["duplicate_of:a_0000"]


def test_applied_only_where_the_pipeline_declares_it(make_settings, codec) -> None:
    """Tokenize reads the dedup result because the pipeline declares the corpus step it
    applies (services/dedup/step.py): a pipeline without it keeps every copy."""
    from common.stages.spec import Pipeline

    s, engine = _run(make_settings, codec, 3)
    write_result(engine.output, {"b_0000": "a_0000"}, shards=[3])
    assert PIPELINE.corpus_step("dedup").applied_by == "tokenize"
    bare = Pipeline(names=PIPELINE.names, load=PIPELINE.spec)  # the stages, no corpus step
    rec = _fields(Engine(s, bare, engine.stage).run(3).record)
    assert _ids(s, 3) == ["a_0000", "a_0001", "b_0000"]
    assert rec["quality_filter"]["dedup"] is None
    assert engine.stage.applies == {}
    engine.run(3, check_done=False)  # the pipeline that declares it: the copy skipped
    assert engine.stage.applies["dedup"] == SUMMARY_KEY  # beside the speakers step's
    assert _ids(s, 3) == ["a_0000", "a_0001"]


def test_the_list_is_held_without_parsed_quality_blocks(tmp_path: Path) -> None:
    """Each tokenize worker holds the whole list: a listed copy's two quality blocks stay JSON
    until a consumer decides again (parsed, they were about 7x a line's memory)."""
    from services.records import Quality

    store = open_store(str(tmp_path))
    q = Quality(multi_speaker=False, speech_fraction=0.8)
    write_result(store, {"b_0000@000001": "a_0000@000000"}, shards=[0, 1],
                 fields={"b_0000@000001": {"rank": 1, "quality": q.to_dict(),
                                           "keep_quality": q.to_dict()}})
    result = DedupResult.load(store)
    line = result.duplicates["b_0000@000001"]
    assert line.quality is None and line.keep_quality is None
    assert result.qualities("b_0000@000001") == (q, q)
    assert result.qualities("a_0000@000000") == (None, None)
