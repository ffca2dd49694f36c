"""Tokenize and the quality annotations: lines carry the filterable fields, the filter policy
skips segments (not decoded) with a reason each in the done record (docs/quality.md)."""

from __future__ import annotations

import json
from pathlib import Path

from common.shards.audio import flac_bytes
from common.shards.tar import ShardWriter
from common.stages.engine import Engine
from services.stages import PIPELINE, output_key
from services.tokenize.stage import TokenizeStage
from tests.services.tokenize.conftest import tone


def _quality(ovrl_after: float, multi: bool, changed: bool | None = None) -> dict:
    return {"dnsmos_before": {"sig": 2.0, "bak": 1.5, "ovrl": 1.6},
            "dnsmos_after": {"sig": 3.3, "bak": 4.0, "ovrl": ovrl_after},
            "dnsmos_delta": {"sig": 1.3, "bak": 2.5, "ovrl": round(ovrl_after - 1.6, 3)},
            "speaker_consistency": 0.6 if multi else 0.95, "speaker_parts": 6,
            "multi_speaker": multi, "fidelity_cer": None if changed is None else 0.5,
            "restoration_changed_text": changed, "speaker_embedding": [0.0625] * 256}


SEGS = {  # key -> (seconds, quality or None)
    "k_0000": (0.6, _quality(3.1, False)),
    "k_0001": (0.8, _quality(3.0, True)),  # two speakers
    "k_0002": (0.5, _quality(1.5, False)),  # DNSMOS OVRL below the default 2.0
    "k_0003": (0.7, _quality(1.2, True, changed=True)),  # everything wrong
    "k_0004": (0.6, None),  # made without annotations: kept
}


def _run(make_settings, codec, shard: int = 3, **kw):
    s = make_settings(tokenize_neucodec_model=str(codec.directory), tokenize_device="cpu", **kw)
    tar = Path(s.output_url) / output_key("enhance", s, shard)
    with ShardWriter(tar) as w:
        for i, (key, (sec, q)) in enumerate(SEGS.items()):
            meta = {"text": key, "language": "en", "duration_seconds": sec}
            if q is not None:
                meta["quality"] = q
            files = {"json": json.dumps(meta).encode()}
            if key != "k_0003":  # a skipped segment is not even decoded: no audio needed
                files["flac"] = flac_bytes(tone(sec, 24_000, seed=i), 24_000)
            w.write(key, files)
    stage = TokenizeStage(s)
    stage.codec = codec
    rec = Engine(s, PIPELINE, stage).run(shard).record
    out = Path(s.output_url) / "tokens" / "neucodec" / f"shard-{shard:06d}.jsonl"
    return rec, [json.loads(x) for x in out.read_text().splitlines()]


def test_policy_skips_with_reasons(make_settings, codec) -> None:
    rec, lines = _run(make_settings, codec, filter_multi_speaker=True)  # off by default
    assert [x["id"] for x in lines] == ["k_0000", "k_0004"]
    q = lines[0]["quality"]
    assert q["multi_speaker"] is False and q["dnsmos_after"]["ovrl"] == 3.1
    assert "speaker_embedding" not in q  # the sidecar keeps it; lines stay small
    assert "quality" not in lines[1]
    assert rec.counts["skipped"] == 3 and rec.counts["errors"] == 0
    assert rec.counts["segments"] == 5 and rec.counts["tokenized"] == 2
    assert [{k: v for k, v in x.items() if k != "quality"} for x in rec.stat("skipped")] == [
        {"key": "k_0001", "reasons": ["multi_speaker"], "seconds": 0.8},
        {"key": "k_0002", "reasons": ["dnsmos_ovrl<2"], "seconds": 0.5},
        {"key": "k_0003", "reasons": ["multi_speaker", "dnsmos_ovrl<2"], "seconds": 0.7},
    ]
    assert rec.stat("skipped")[1]["quality"]["dnsmos_after"]["ovrl"] == 1.5  # for `onsei report`
    f = rec.stat("quality_filter")
    assert f["by_reason"] == {"multi_speaker": 2, "dnsmos_ovrl<2": 2}
    assert f["skipped_seconds"] == 2.0 and f["restoration_changed_text"] is False


def test_filters_off_keep_everything_and_fidelity_filter_can_be_on(make_settings, codec) -> None:
    rec, lines = _run(make_settings, codec, filter_multi_speaker=False, filter_min_ovrl=0)
    assert [x["id"] for x in lines] == ["k_0000", "k_0001", "k_0002", "k_0004"]
    assert rec.counts["skipped"] == 0 and rec.stat("skipped") == []
    # a missing audio is an error, not a skip
    assert rec.stat("errors_sample") == [{"key": "k_0003", "reason": "missing_audio"}]
    rec2, _ = _run(make_settings, codec, shard=4, filter_multi_speaker=False, filter_min_ovrl=0,
                   filter_restoration_changed_text=True)
    assert [(x["key"], x["reasons"]) for x in rec2.stat("skipped")] == [
        ("k_0003", ["restoration_changed_text"])]
