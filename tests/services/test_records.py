"""The shared records (services/records.py): each reads what the previous version wrote, writes
the same keys and values back, keeps keys it does not know, and refuses what is not it."""

from __future__ import annotations

import json

import pytest

from services.asr import records as asr_records
from services.records import (
    NEU_TOKENS,
    AsrLine,
    AsrSegment,
    LineStatus,
    Mos,
    Quality,
    RecordError,
    Sidecar,
    SkippedSegment,
    TokenLine,
    segment_id,
    written_keys,
)

# Lines exactly as a plain dict + json.dumps writes them (older files, other writers).
ASR_LINE = (
    '{"key": "000000051649", "language": "ja", "language_probability": 0.9871, '
    '"duration": 61.25, "status": "ok", "segments": ['
    '{"idx": 0, "start": 0.48, "end": 9.9, "text": "こんにちは", "avg_logprob": -0.2113, '
    '"no_speech_prob": 0.0121, "compression_ratio": 1.13, "kept": true, "reason": null}, '
    '{"idx": 1, "start": 10.5, "end": 10.9, "text": "", "avg_logprob": -1.5, '
    '"no_speech_prob": 0.8, "compression_ratio": 0.0, "kept": false, '
    '"reason": "empty_text,too_short"}], "notes": ["truncated:flac"]}')
ASR_DROPPED = ('{"key": "b", "language": "es", "language_probability": 0.91, "duration": 3.5, '
               '"status": "dropped:language", "segments": []}')
ASR_ERROR = ('{"key": "c", "language": null, "language_probability": null, "duration": null, '
             '"status": "error:undecodable", "segments": []}')
MOS = '{"sig": 3.412, "bak": 3.96, "ovrl": 3.101}'
QUALITY = (
    f'{{"dnsmos_before": {MOS}, "dnsmos_after": {MOS}, '
    '"dnsmos_delta": {"sig": 0.0, "bak": 0.0, "ovrl": 0.0}, "speaker_consistency": 0.9213, '
    '"speaker_parts": 4, "multi_speaker": false, "fidelity_cer": 0.04, '
    '"restoration_changed_text": false, "speaker_embedding": [0.0132, -0.0871, 0.1], '
    '"fidelity_text": "こんにちは"}')
SIDECAR = ('{"text": "こんにちは", "language": "ja", "source_key": "000000051649", "start": 0.48, '
           f'"end": 9.9, "duration_seconds": 9.42, "quality": {QUALITY}}}')
SIDECAR_PLAIN = ('{"text": "hello", "language": "en", "source_key": "k", "start": 0.0, '
                 '"end": 1.5, "duration_seconds": 1.5}')
FILTERABLE = ("dnsmos_before", "dnsmos_after", "dnsmos_delta", "speaker_consistency",
              "multi_speaker", "fidelity_cer", "restoration_changed_text")
TOKEN_LINE = ('{"id": "000000051649_0000", "text": "こんにちは", "codes": {"neu_tokens": '
              '[3303, 3175, 0, 65535]}, "duration_seconds": 9.42, "quality": {'
              + ", ".join(f'"{k}": {json.dumps(json.loads(QUALITY)[k])}' for k in FILTERABLE)
              + "}}")
SKIPPED = ('{"key": "k_0003", "reasons": ["multi_speaker", "dnsmos_ovrl<2"], "seconds": 7.5, '
           '"quality": {"dnsmos_before": {"sig": 2.0, "bak": 2.1, "ovrl": 1.9}, '
           '"dnsmos_after": {"sig": 2.0, "bak": 2.1, "ovrl": 1.5}, "dnsmos_delta": '
           '{"sig": 0.0, "bak": 0.0, "ovrl": -0.4}, "speaker_consistency": 0.61, '
           '"multi_speaker": true, "fidelity_cer": null, "restoration_changed_text": null}}')

PREVIOUS = [(AsrLine, ASR_LINE), (AsrLine, ASR_DROPPED), (AsrLine, ASR_ERROR), (Mos, MOS),
            (Quality, QUALITY), (Sidecar, SIDECAR), (Sidecar, SIDECAR_PLAIN),
            (TokenLine, TOKEN_LINE), (SkippedSegment, SKIPPED)]


@pytest.mark.parametrize(("record", "text"), PREVIOUS, ids=lambda x: getattr(x, "__name__", ""))
def test_reads_the_previous_version_and_writes_the_same_keys_and_values(record, text) -> None:
    rec = record.from_json(text)
    assert json.loads(rec.to_json()) == json.loads(text)  # key order is free; values are not
    assert rec.to_dict() == json.loads(text)
    assert record.from_json(rec.to_json()) == rec
    assert record.from_dict(json.loads(text)) == rec
    assert record.from_json(text.encode()) == rec  # bytes (a tar member) read the same


def test_asr_line_fields() -> None:
    line = AsrLine.from_json(ASR_LINE)
    assert line.ok and line.key == "000000051649" and line.language == "ja"
    assert [s.idx for s in line.kept] == [0] and line.kept[0].text == "こんにちは"
    assert line.segments[1].reason == "empty_text,too_short" and line.notes == ["truncated:flac"]
    dropped = AsrLine.from_json(ASR_DROPPED)
    assert not dropped.ok and dropped.kept == [] and dropped.notes is None
    assert "notes" not in json.loads(dropped.to_json())  # written only when there are some


def test_asr_writer_rounds_and_has_every_key_in_order() -> None:
    seg = asr_records.segment(3, 1.23456, 9.87654, "hi.", -0.212345, 0.0123456, 1.23456, [])
    flagged = asr_records.segment(4, 10.0, 10.2, "", -1.0, 0.9, 0.0, ["empty_text", "too_short"])
    line = asr_records.line("k", LineStatus.OK, language="en", language_probability=0.987654,
                            duration=61.23456, segments=[seg, flagged])
    d = json.loads(line.to_json())
    assert tuple(d) == asr_records.LINE_FIELDS == written_keys(AsrLine)
    assert tuple(d["segments"][0]) == asr_records.SEGMENT_FIELDS == written_keys(AsrSegment)
    assert d["language_probability"] == 0.9877 and d["duration"] == 61.235
    assert d["segments"][0] == {"idx": 3, "start": 1.235, "end": 9.877, "text": "hi.",
                                "avg_logprob": -0.2123, "no_speech_prob": 0.0123,
                                "compression_ratio": 1.235, "kept": True, "reason": None}
    assert d["segments"][1]["kept"] is False
    assert d["segments"][1]["reason"] == "empty_text,too_short"
    assert json.loads(asr_records.line("e", LineStatus.ERROR, "empty").to_json()) == {
        "key": "e", "language": None, "language_probability": None, "duration": None,
        "status": "error:empty", "segments": []}


def test_quality_block_and_its_filterable_part() -> None:
    sidecar = Sidecar.from_json(SIDECAR)
    q = sidecar.quality
    assert q is not None and q.dnsmos_after == Mos(sig=3.412, bak=3.96, ovrl=3.101)
    assert q.speaker_parts == 4 and q.speaker_embedding == [0.0132, -0.0871, 0.1]
    part = json.loads(q.filterable().to_json())
    assert tuple(part) == FILTERABLE  # what the tokens line carries: no embedding, no text
    assert part == json.loads(TOKEN_LINE)["quality"]
    assert Sidecar.from_json(SIDECAR_PLAIN).quality is None
    assert "quality" not in json.loads(Sidecar.from_json(SIDECAR_PLAIN).to_json())


def test_token_line_fields() -> None:
    line = TokenLine.from_json(TOKEN_LINE)
    assert line.id == segment_id("000000051649", 0)
    assert line.neu_tokens == line.codes[NEU_TOKENS] == [3303, 3175, 0, 65535]
    written = TokenLine(id="k_0001", text="x", codes={NEU_TOKENS: [1, 2]}, duration_seconds=1.5)
    assert json.loads(written.to_json()) == {"id": "k_0001", "text": "x",
                                             "codes": {"neu_tokens": [1, 2]},
                                             "duration_seconds": 1.5}  # no quality: no key


def test_keys_of_a_newer_writer_are_kept_and_written_back() -> None:
    d = json.loads(ASR_LINE)
    d["speaker_id"] = "spk-7"
    d["segments"][0]["emotion"] = {"label": "happy", "p": 0.8}
    line = AsrLine.from_dict(d)
    assert line.extra == {"speaker_id": "spk-7"}
    assert line.segments[0].extra == {"emotion": {"label": "happy", "p": 0.8}}
    assert json.loads(line.to_json()) == d
    q = json.loads(QUALITY) | {"mos_v2": 3.3}
    assert Quality.from_dict(q).to_dict() == q
    assert "mos_v2" not in Quality.from_dict(q).filterable().to_dict()


def test_absent_optional_fields_read_as_defaults() -> None:
    line = AsrLine.from_json('{"key": "a"}')
    assert (line.status, line.language, line.duration, line.segments) == ("", None, None, [])
    assert not line.ok  # no status: not transcribed
    assert Sidecar.from_json("{}") == Sidecar()
    assert Quality.from_dict({}).multi_speaker is None
    assert Mos.from_dict({"ovrl": 1.4}).to_dict() == {"ovrl": 1.4}  # partial scores stay partial


@pytest.mark.parametrize(("record", "text", "where"), [
    (AsrLine, '{"status": "ok"}', "key"),
    (AsrLine, '{"key": 7}', "key"),
    (AsrLine, '{"key": "a", "segments": [{"idx": 0, "start": "0.5", "end": 1.0}]}',
     "segments.0.start"),
    (AsrLine, '{"key": "a", "segments": [{"idx": 0, "start": 0.5}]}', "segments.0.end"),
    (AsrLine, '{"key": "a", "segments": [{"idx": 0, "start": 0, "end": 1, "kept": 1}]}',
     "segments.0.kept"),
    (AsrLine, '{"key": "a", "segments": {}}', "segments"),
    (AsrLine, '["key"]', "object"),
    (AsrLine, '{"key": "a", "sta', "JSON"),
    (Sidecar, '{"text": "x", "quality": [1]}', "quality"),
    (Sidecar, b'\xff\xfe', "JSON"),
    (TokenLine, '{"id": "k", "codes": {"neu_tokens": "1,2"}}', "codes"),
    (TokenLine, '{"text": "x"}', "id"),
    (SkippedSegment, '{"key": "k", "reasons": "multi_speaker"}', "reasons"),
])
def test_malformed_input_raises_a_record_error(record, text, where) -> None:
    with pytest.raises(RecordError, match=where) as ei:
        record.from_json(text)
    assert isinstance(ei.value, ValueError)  # readers that catch ValueError still count it
    assert str(ei.value).startswith(record.__name__)


def test_records_are_frozen() -> None:
    line = AsrLine.from_json(ASR_DROPPED)
    with pytest.raises(ValueError, match="frozen"):
        line.status = "ok"  # type: ignore[misc]  # the assignment under test
    assert line.model_copy(update={"notes": ["x"]}).notes == ["x"] and line.notes is None


def test_a_corpus_id_carries_its_shard_once() -> None:
    """Two shards may hold the same member keys: the corpus names a segment, and a speaker
    label, with its shard; a name that already has one keeps it, and any key reads back."""
    from services.records import corpus_id, local_name, shard_of

    assert corpus_id(segment_id("clip", 0), 1) == "clip_0000@000001"
    assert corpus_id(segment_id("clip", 3, part=2), 12) == "clip_0003-2@000012"
    assert corpus_id("clip#s0", 0) == "clip#s0@000000"
    assert corpus_id("clip_0000@000001", 7) == "clip_0000@000001"  # already qualified
    assert corpus_id(segment_id("a@b/c@9", 1), 2) == "a@b/c@9_0001@000002"
    assert shard_of("clip_0000@000001") == 1 and shard_of("clip_0000") is None
    assert shard_of("a@b/c@9_0001") is None and shard_of("x@") is None
    for name in ("clip_0000", "a@b/c@9_0001", "clip#s0", "x@"):
        assert local_name(corpus_id(name, 5)) == name and local_name(name) == name


def test_asr_line_status_as_kind_and_reason() -> None:
    from services.records import line_status

    def outcome(status: str) -> tuple[LineStatus, str]:
        return AsrLine(key="k", status=status).outcome

    assert outcome("ok") == (LineStatus.OK, "")
    assert outcome("dropped:language") == (LineStatus.DROPPED, "language")
    assert outcome("error:undecodable:x") == (LineStatus.ERROR, "undecodable:x")
    assert outcome("dropped") == (LineStatus.DROPPED, "unspecified")
    assert outcome("") == (LineStatus.ERROR, "missing_status")
    assert outcome("weird:thing") == (LineStatus.ERROR, "unknown_status:weird:thing")
    assert line_status(LineStatus.DROPPED, "no_speech") == "dropped:no_speech"
    assert line_status(LineStatus.OK) == "ok"
