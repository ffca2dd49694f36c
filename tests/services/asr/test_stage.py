"""The ASR stage on one real shard (bundled Whisper base, int8, CPU): language ID, transcription,
segment policy, error lines, JSONL schema, done record."""

from __future__ import annotations

import re
from itertools import pairwise

import pytest

from fixtures.longform import wer  # one WER for the tests and the bench
from services.asr.settings import AsrSettings
from tests.services.asr.conftest import SR, Corpus, ShardRun

pytestmark = pytest.mark.timeout(900)


def test_wer_helper() -> None:
    assert wer("a b c d", "a b c d") == 0.0
    assert wer("a b c d", "a x c") == 0.5


def test_english_transcribed_with_low_wer(shard_run: ShardRun, corpus: Corpus) -> None:
    line = shard_run.by_key["en"]
    assert line["status"] == "ok" and line["language"] == "en"
    assert line["language_probability"] >= 0.8
    kept = [s for s in line["segments"] if s["kept"]]
    # one segment: 0.6 s pauses join the sentences into one clip (<= the segment max)
    assert len(kept) >= 1 and all(s["end"] - s["start"] <= 30.0 for s in kept)
    hyp = " ".join(s["text"] for s in kept)
    score = wer(corpus.en_reference, hyp)
    print(f"English WER {score:.3f}: {hyp!r}")
    assert score <= 0.15, hyp


def test_japanese_kept_as_ja(shard_run: ShardRun) -> None:
    line = shard_run.by_key["ja"]
    print("ja:", line["language"], line["language_probability"],
          [s["text"] for s in line["segments"]])
    assert line["status"] == "ok" and line["language"] == "ja"
    assert any(s["kept"] and s["text"] for s in line["segments"])


def test_spanish_dropped_by_language(shard_run: ShardRun) -> None:
    line = shard_run.by_key["es"]
    print("es:", line["language"], line["language_probability"])
    assert line["status"] == "dropped:language"
    assert line["language"] not in ("ja", "en") or line["language_probability"] < 0.5
    assert line["language_probability"] is not None and line["segments"] == []


@pytest.mark.parametrize("key", ["silence", "noise", "chord"])
def test_non_speech_gives_no_kept_segment(shard_run: ShardRun, key: str) -> None:
    line = shard_run.by_key[key]
    print(key, line["status"], line["segments"])
    assert not line["status"].startswith("error")
    assert abs(line["duration"] - 10.0) < 0.05
    assert not any(s["kept"] for s in line["segments"])


def test_long_file_timestamps(shard_run: ShardRun, corpus: Corpus) -> None:
    line = shard_run.by_key["long"]
    segs = line["segments"]
    assert line["status"] == "ok" and line["language"] == "en"
    assert abs(line["duration"] - corpus.long.audio.size / SR) < 0.05
    assert [s["idx"] for s in segs] == list(range(len(segs)))
    for s in segs:
        assert 0.0 <= s["start"] < s["end"] <= line["duration"] + 1e-3
    for a, b in pairwise(segs):
        assert a["end"] <= b["start"] + 1e-6, (a, b)  # monotonic, non-overlapping
    kept = [s for s in segs if s["kept"]]
    assert all(AsrSettings().asr_segment_min_seconds <= s["end"] - s["start"] <= 30.0
               for s in kept)
    # Every sentence spoken is (mostly) inside kept segments.
    for start, end in corpus.long.speech:
        covered = sum(max(0.0, min(end, s["end"]) - max(start, s["start"])) for s in kept)
        assert covered >= 0.8 * (end - start), (start, end)


def test_error_lines_and_shard_goes_on(shard_run: ShardRun) -> None:
    by = shard_run.by_key
    assert by["corrupt"]["status"] == "error:undecodable"
    assert by["empty"]["status"] == "error:empty"
    assert by["textonly"]["status"] == "error:no_audio"
    assert by["tiny"]["status"] == "error:too_short"
    for k in ("corrupt", "empty", "textonly", "tiny"):
        assert by[k]["segments"] == [] and by[k]["language"] is None


def test_exactly_one_line_per_member_in_order(shard_run: ShardRun, corpus: Corpus) -> None:
    assert [x["key"] for x in shard_run.lines] == list(corpus.members)
    assert shard_run.raw.endswith("\n") and len(shard_run.raw.splitlines()) == len(corpus.members)


def test_jsonl_schema(shard_run: ShardRun) -> None:
    from services.asr.records import LINE_FIELDS, SEGMENT_FIELDS

    for line in shard_run.lines:
        assert tuple(line) == LINE_FIELDS
        assert isinstance(line["key"], str)
        st = line["status"]
        assert st == "ok" or re.fullmatch(r"(dropped|error):[a-z_]+[a-z0-9_:]*", st), st
        assert line["language"] is None or isinstance(line["language"], str)
        assert line["language_probability"] is None or 0.0 <= line["language_probability"] <= 1.0
        assert line["duration"] is None or line["duration"] > 0
        for s in line["segments"]:
            assert tuple(s)[:len(SEGMENT_FIELDS)] == SEGMENT_FIELDS
            assert set(tuple(s)[len(SEGMENT_FIELDS):]) <= {"words", "min_word_probability",
                                                           "language", *TEXT_FORMS}
            assert isinstance(s["language"], str)  # every segment its own
            assert isinstance(s["idx"], int) and isinstance(s["text"], str)
            for f in ("start", "end", "avg_logprob", "no_speech_prob", "compression_ratio"):
                assert isinstance(s[f], float | int)
            assert isinstance(s["kept"], bool)
            assert (s["reason"] is None) == s["kept"]
            if s["reason"]:
                allowed = {"empty_text", "non_speech", "low_confidence", "repetition",
                           "too_short", "too_long", "text_coverage", "truncated", "language"}
                assert set(s["reason"].split(",")) <= allowed
        if st != "ok":
            assert line["segments"] == []


TEXT_FORMS = ("text_spoken", "text_spoken_by", "reading", "accent", "phonemes")


def test_kept_segments_carry_their_spoken_forms(shard_run: ShardRun) -> None:
    """Each kept segment has text_spoken from its language's normaliser (services/text);
    Japanese ones their reading and accent; a segment not kept has none."""
    seen = set()
    for line in shard_run.lines:
        for s in line["segments"]:
            if not s["kept"]:
                assert not set(TEXT_FORMS) & set(s)
                continue
            assert s["text_spoken"] and s["text_spoken_by"].split()[0] in (
                "WeTextProcessing", "pyopenjtalk-plus")
            assert ("reading" in s and "accent" in s) == (s["language"] == "ja")
            assert "phonemes" not in s  # off by default
            seen.add(s["language"])
    assert seen == {"en", "ja"}
    assert shard_run.record.stat("text_seconds") > 0


def test_done_record(shard_run: ShardRun, corpus: Corpus) -> None:
    rec = shard_run.record
    c = rec.counts
    assert c["files"] == len(corpus.members)
    assert c["errors"] == 4 and c["files"] == c["ok"] + c["dropped"] + c["errors"]
    kept = sum(s["kept"] for x in shard_run.lines for s in x["segments"])
    assert c["kept_segments"] == kept > 0
    assert rec.model == shard_run.settings.asr_model and rec.version
    assert rec.model_info["compute_type"] == "int8" and rec.model_info["device"] == "cpu"
    durations = sum(x["duration"] for x in shard_run.lines if x["duration"])
    assert rec.audio_seconds_in == pytest.approx(durations, abs=0.05)
    kept_s = sum(s["end"] - s["start"] for x in shard_run.lines for s in x["segments"] if s["kept"])
    assert rec.audio_seconds_out == pytest.approx(kept_s, abs=0.05)
    assert rec.stat("languages").get("en", 0) >= 2 and rec.stat("languages").get("ja") == 1
    # and each input key's provenance, from its metadata (services/provenance)
    assert shard_run.record.outputs == ["asr/shard-000007.jsonl", "provenance/shard-000007.jsonl"]


def test_truncated_shard_raises_and_publishes_nothing(asr_stage, tmp_path) -> None:
    from common.shards.tar import ShardError
    from fixtures.speechgen import make_shard, silence, wav_bytes

    shard = make_shard(tmp_path / "s.tar", {"a": {"wav": wav_bytes(silence(2.0))}})
    data = shard.read_bytes()
    shard.write_bytes(data[: len(data) // 3])  # cut inside the member
    work = tmp_path / "work"
    work.mkdir()
    with pytest.raises(ShardError):
        asr_stage.process(9, {"shard": shard}, work)


def test_the_stage_writes_the_same_lines_one_file_at_a_time(asr_stage, asr_root, shard_run,
                                                           tmp_path) -> None:
    """The default on a CPU is two files in flight (shard_run's lines); one at a time, every
    line is the same byte for byte."""
    settings = asr_stage.settings
    from services.asr.overlap import files_in_flight

    assert files_in_flight(settings.asr_files_in_flight, asr_stage._loaded.device, False) == 2
    asr_stage.settings = settings.model_copy(update={"asr_files_in_flight": 1})
    try:
        result = asr_stage.process(7, {"shard": asr_root / "raw" / settings.shard_name(7)},
                                   tmp_path)
    finally:
        asr_stage.settings = settings
    out = next(p for p in result.outputs.values() if p.name.endswith(".asr.jsonl"))
    assert out.read_text(encoding="utf-8") == shard_run.raw
