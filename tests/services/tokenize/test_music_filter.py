"""``quality.music`` reaches the tokens line, and the filter skips a segment with a music bed
(``music>0.5``, ``ONSEI_FILTER_MAX_MUSIC``): a sidecar without the field (annotated before it
existed, or too short to score) is kept."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from common.shards.audio import flac_bytes
from common.shards.tar import ShardWriter
from common.stages.engine import Engine
from services.enhance.quality.dnsmos import MosScore
from services.enhance.quality.records import QualityRecord
from services.records import Quality
from services.stages import PIPELINE, output_key
from services.tokenize.filter import FilterPolicy
from services.tokenize.stage import TokenizeStage
from tests.services.tokenize.conftest import tone


def _quality(music: float | None) -> dict:
    q = {"dnsmos_before": {"sig": 2.0, "bak": 1.5, "ovrl": 1.6},
         "dnsmos_after": {"sig": 3.3, "bak": 4.0, "ovrl": 2.9},
         "dnsmos_delta": {"sig": 1.3, "bak": 2.5, "ovrl": 1.3},
         "speaker_consistency": None, "multi_speaker": False, "fidelity_cer": None,
         "restoration_changed_text": None, "speech_fraction": 0.8}
    return q if music is None else {**q, "music": music}


def test_policy_rule_threshold_off_and_absent() -> None:
    on = FilterPolicy()
    assert on.max_music == 0.5 and on.describe()["max_music"] == 0.5
    assert on.reasons(_quality(0.91)) == ["music>0.5"]
    assert on.reasons(_quality(0.5)) == [] and on.reasons(_quality(0.12)) == []
    assert on.reasons(_quality(None)) == []  # not scored: the rule does not apply
    assert FilterPolicy(max_music=1.0).reasons(_quality(1.0)) == []  # off


def test_annotation_writes_music_rounded_and_tokens_keep_it() -> None:
    rec = QualityRecord(dnsmos_before=MosScore(2, 2, 2), dnsmos_after=MosScore(3, 3, 3),
                        speaker_embedding=np.zeros(256, np.float32),
                        speaker_consistency=None, speaker_parts=1, multi_speaker=False,
                        music=0.45678)
    q = rec.to_record()
    assert q.music == 0.457 and q.filterable().music == 0.457
    assert "music" not in json.loads(Quality().to_json())  # absent: not written


def test_tokens_line_has_music_and_a_bed_is_skipped(make_settings, codec) -> None:
    s = make_settings(neucodec_model=str(codec.directory), tokenize_device="cpu")
    tar = Path(s.output_url) / output_key("enhance", s, 6)
    segs = {"m_0000": 0.05, "m_0001": 0.93, "m_0002": None}
    with ShardWriter(tar) as w:
        for i, (key, music) in enumerate(segs.items()):
            meta = {"text": key, "language": "en", "duration_seconds": 0.6,
                    "quality": _quality(music)}
            w.write(key, {"json": json.dumps(meta).encode(),
                          "flac": flac_bytes(tone(0.6, 24_000, seed=i), 24_000)})
    stage = TokenizeStage(s)
    stage.codec = codec
    rec = Engine(s, PIPELINE, stage).run(6).record
    out = Path(s.output_url) / "tokens" / "neucodec" / "shard-000006.jsonl"
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert [x["id"] for x in lines] == ["m_0000", "m_0002"]
    assert lines[0]["quality"]["music"] == 0.05 and "music" not in lines[1]["quality"]
    skipped = rec.stat("skipped") if hasattr(rec, "stat") else rec["skipped"]
    assert [(x["key"], x["reasons"]) for x in skipped] == [("m_0001", ["music>0.5"])]
