"""Where a file's work stops: language ID reads only the head of a file it drops (VAD and
encoder passes bounded), all of a file it keeps; a truncated file's last segment is flagged."""

from __future__ import annotations

import math

import pytest

from fixtures.longform import make_longform
from fixtures.speechgen import make_shard
from services.asr import clips as clips_mod
from services.asr.batched import cpu_decode_parts
from tests.services.asr.conftest import SR
from tests.system_packages import ESPEAK, needs

pytestmark = [pytest.mark.timeout(600),
              needs(ESPEAK)]


@pytest.fixture
def vad_calls(monkeypatch: pytest.MonkeyPatch) -> list[tuple[float, float]]:
    """(start, end) seconds of every VAD call."""
    calls: list[tuple[float, float]] = []
    orig = clips_mod.speech_spans

    def spy(audio, settings, max_span, offset_seconds=0.0):
        calls.append((offset_seconds, offset_seconds + audio.size / SR))
        return orig(audio, settings, max_span, offset_seconds)

    monkeypatch.setattr(clips_mod, "speech_spans", spy)
    return calls


@pytest.fixture
def encoded_rows(asr_stage, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    rows: list[int] = []
    tr = asr_stage._transcriber()
    orig = tr.model.encode
    monkeypatch.setattr(tr.model, "encode", lambda f: (rows.append(len(f)), orig(f))[1])
    return rows


# Spanish: whisper base is sure of it at the first look; German: unsure which language (0.35
# German, then Welsh, Latvian...) but sure it is neither English nor Japanese
@pytest.mark.parametrize("language", ["es", "de"])
def test_dropped_file_costs_its_head_only(asr_stage, vad_calls, encoded_rows,
                                          language: str) -> None:
    s = asr_stage.settings
    other = make_longform(language, seconds=150.0, min_sentences=10)
    line = asr_stage.transcribe_file(language, other.audio).line.to_dict()
    assert line["status"] == "dropped:language" and line["language"] == language
    head = max(s.asr_lid_head_seconds, 60.0)
    assert vad_calls and max(end for _, end in vad_calls) <= head + 0.01
    # the head's windows only (a file is dropped when none of them is in a kept language), never
    # the 5 windows of the whole file
    assert 1 <= sum(encoded_rows) <= math.ceil(head / 30.0)


def test_kept_file_is_read_to_its_end_encoding_each_window_once_in_full_batches(
        asr_stage, vad_calls, encoded_rows, monkeypatch: pytest.MonkeyPatch) -> None:
    """A kept file is read to its end; speech is packed into fewer windows than there are
    clips; language ID's windows are encoded once and decoded in the same batch as the
    others."""
    tr = asr_stage._transcriber()
    batches: list[int] = []
    orig = tr.pipeline.generate_segment_batched
    monkeypatch.setattr(tr.pipeline, "generate_segment_batched",
                        lambda f, *a: (batches.append(len(f)), orig(f, *a))[1])
    english = make_longform("en", seconds=100.0, min_sentences=10, seed=3)
    # clips uncut: one segment per clip
    monkeypatch.setattr(asr_stage, "settings",
                        asr_stage.settings.model_copy(update={"asr_segment_target_seconds": 0.0}))
    out = asr_stage.transcribe_file("en", english.audio)
    line = out.line.to_dict()
    assert line["status"] == "ok" and line["language"] == "en"
    assert max(end for _, end in vad_calls) == pytest.approx(english.seconds, abs=0.01)
    assert line["segments"][-1]["end"] >= english.spans[-1][1] - 0.5  # the last sentence too
    assert line["segments"][0]["start"] <= english.spans[0][0] + 0.1
    n = out.segments
    assert out.extra.get("coverage_retried", 0) == 0
    assert 3 < n <= asr_stage.settings.asr_batch_size  # more clips than language ID looks at
    rows = len(encoded_rows)
    assert encoded_rows == [1] * rows  # one row per call on a CPU
    assert 3 <= rows < n  # windows packed across clips: fewer rows than segments
    # each window decoded once, language ID's with the rest, in the CPU's decoder calls
    assert batches == [p.stop - p.start for p in cpu_decode_parts(rows)]


def test_truncated_file_flags_the_segment_at_the_cut(asr_stage, tmp_path) -> None:
    from common.shards.audio import flac_bytes

    english = make_longform("en", seconds=40.0, min_sentences=8, seed=4)
    whole = flac_bytes(english.audio, SR)
    shard = make_shard(tmp_path / "s.tar", {"cut": {"flac": whole[: len(whole) * 2 // 3]},
                                            "whole": {"flac": whole}})
    work = tmp_path / "work"
    work.mkdir()
    res = asr_stage.process(3, {"shard": shard}, work)
    import json

    lines = {x["key"]: x for x in map(json.loads, next(iter(res.outputs.values()))
                                      .read_text().splitlines())}
    cut, ok = lines["cut"], lines["whole"]
    assert cut["notes"][0].startswith("truncated:") and "notes" not in ok
    assert "truncated" in cut["segments"][-1]["reason"] and not cut["segments"][-1]["kept"]
    assert all("truncated" not in (x["reason"] or "") for x in cut["segments"][:-1])
    assert all("truncated" not in (x["reason"] or "") for x in ok["segments"])


def test_decoding_the_stages_own_encoder_rows_gives_the_pipelines_text(asr_stage) -> None:
    """The rows the stage encodes itself (one per call on a CPU) decode, with beam search as a
    coverage retry does, to what the pipeline's own batched encoding gives."""
    from services.asr.clips import file_spans, plan_clips
    from services.asr.windows import alone

    s = asr_stage.settings
    tr = asr_stage._transcriber()
    english = make_longform("en", seconds=40.0, min_sentences=6, seed=5)
    clips = plan_clips(file_spans(english.audio, s), s)
    assert len(clips) >= 2
    feats = tr.features(english.audio, alone(clips))
    theirs = tr.transcribe(feats, "en", beam_size=5)
    ours = tr.transcribe(feats, "en", tr.rows(feats), beam_size=5)
    assert [t.text for t in ours] == [t.text for t in theirs] and all(t.text for t in ours)
