"""Tokenize keeps what trainers select on: ``speaker_id``, ``min_word_probability``, the
segment's ``language`` and the
prosody fields reach the tokens line; a segment that is not speech (silence, a tone:
speech_fraction below the policy's minimum) is skipped with its reason, whatever DNSMOS said
(docs/quality.md)."""

from __future__ import annotations

import json
from pathlib import Path

from common.shards.audio import flac_bytes
from common.shards.tar import ShardWriter
from common.stages.engine import Engine
from services.stages import PIPELINE, output_key
from services.tokenize.filter import FilterPolicy
from services.tokenize.stage import TokenizeStage
from tests.services.tokenize.conftest import tone


def _quality(speech: float) -> dict:
    return {"dnsmos_before": {"sig": 2.0, "bak": 1.5, "ovrl": 1.6},
            "dnsmos_after": {"sig": 3.3, "bak": 4.0, "ovrl": 2.9},  # passes the OVRL rule
            "dnsmos_delta": {"sig": 1.3, "bak": 2.5, "ovrl": 1.3},
            "speaker_consistency": None, "multi_speaker": False, "fidelity_cer": None,
            "restoration_changed_text": None, "speech_fraction": speech,
            "pitch": {"mean": 121.5, "std": 18.2}, "speaking_rate": 14.1,
            "speaking_rate_unit": "chars/s", "snr": 23.4}


def _stat(rec, name: str):
    """A figure of the done record, whether it is a dict or a typed record with ``stat``."""
    return rec.stat(name) if hasattr(rec, "stat") else rec[name]


SEGS = {  # key -> (speaker_id, speech fraction)
    "f_0000": ("f#s0", 0.86),
    "f_0001": ("f#s1", 0.72),
    "f_0002": ("f#s0", 0.0),  # six seconds of digital silence, restored
    "g_0000": (None, 0.31),  # made before speaker labels: no speaker_id
}


def test_lines_carry_speaker_and_prosody_and_silence_is_skipped(make_settings, codec) -> None:
    s = make_settings(tokenize_neucodec_model=str(codec.directory), tokenize_device="cpu")
    tar = Path(s.output_url) / output_key("enhance", s, 5)
    with ShardWriter(tar) as w:
        for i, (key, (sid, speech)) in enumerate(SEGS.items()):
            meta = {"text": key, "language": "ja" if key == "f_0001" else "en",
                    "duration_seconds": 0.6,
                    "quality": _quality(speech)}
            if key == "f_0001":  # the text as spoken (services/text)
                meta.update(text_spoken="三個", text_spoken_by="pyopenjtalk-plus 0.4.1",
                            reading="サンコ", accent="サ'ンコ")
            if sid is not None:
                meta["speaker_id"] = sid
                meta["min_word_probability"] = 0.42
            w.write(key, {"json": json.dumps(meta).encode(),
                          "flac": flac_bytes(tone(0.6, 24_000, seed=i), 24_000)})
    stage = TokenizeStage(s)
    stage.codec = codec
    rec = Engine(s, PIPELINE, stage).run(5).record
    out = Path(s.output_url) / "tokens" / "neucodec" / "shard-000005.jsonl"
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert [x["id"] for x in lines] == ["f_0000", "f_0001", "g_0000"]
    assert [x.get("speaker_id") for x in lines] == ["f#s0", "f#s1", None]
    assert [x.get("min_word_probability") for x in lines] == [0.42, 0.42, None]
    assert [x.get("language") for x in lines] == ["en", "ja", "en"]  # each segment's own
    assert {k: lines[1][k] for k in ("text", "text_spoken", "reading", "accent")} == {
        "text": "f_0001", "text_spoken": "三個", "reading": "サンコ", "accent": "サ'ンコ"}
    assert "text_spoken" not in lines[0]
    q = lines[0]["quality"]
    assert q["pitch"] == {"mean": 121.5, "std": 18.2} and q["snr"] == 23.4
    assert q["speaking_rate"] == 14.1 and q["speaking_rate_unit"] == "chars/s"
    assert [(x["key"], x["reasons"]) for x in _stat(rec, "skipped")] == [
        ("f_0002", ["speech_fraction<0.1"])]
    assert _stat(rec, "quality_filter")["min_speech_fraction"] == 0.1


def test_the_speech_rule_off_and_unannotated_fields() -> None:
    p = FilterPolicy(min_speech_fraction=0.0)
    assert p.reasons(_quality(0.0)) == []
    on = FilterPolicy(min_speech_fraction=0.1)
    assert on.reasons(_quality(0.09)) == ["speech_fraction<0.1"]
    old = {k: v for k, v in _quality(0.0).items() if k != "speech_fraction"}
    assert on.reasons(old) == []  # annotated before the field existed: the rule does not apply
