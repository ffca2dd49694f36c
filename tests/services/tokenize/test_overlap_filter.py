"""``quality.overlap`` reaches the tokens line, and ``ONSEI_FILTER_MAX_OVERLAP`` skips a segment
with more overlapped talk than it allows (``overlap>X``); off by default (1); a sidecar without
the field (annotated before it existed, or too short to score) is kept."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from common.stages.engine import Engine
from services.enhance.quality.dnsmos import MosScore
from services.enhance.quality.records import QualityRecord
from services.records import Quality
from services.stages import PIPELINE, output_key
from services.tokenize.filter import FilterPolicy
from services.tokenize.stage import TokenizeStage
from tests.services.tokenize.conftest import write_enhanced_tar


def _quality(overlap: float | None) -> dict:
    q = {"dnsmos_before": {"sig": 2.0, "bak": 1.5, "ovrl": 1.6},
         "dnsmos_after": {"sig": 3.3, "bak": 4.0, "ovrl": 2.9},
         "dnsmos_delta": {"sig": 1.3, "bak": 2.5, "ovrl": 1.3},
         "speaker_consistency": None, "multi_speaker": False, "fidelity_cer": None,
         "restoration_changed_text": None, "speech_fraction": 0.8}
    return q if overlap is None else {**q, "overlap": overlap}


def test_policy_rule_threshold_off_and_absent() -> None:
    assert FilterPolicy().max_overlap == 1.0 and FilterPolicy().reasons(_quality(1.0)) == []
    on = FilterPolicy(max_overlap=0.3)
    assert on.describe()["max_overlap"] == 0.3
    assert on.reasons(_quality(0.75)) == ["overlap>0.3"]
    assert on.reasons(_quality(0.3)) == [] and on.reasons(_quality(None)) == []


def test_annotation_writes_overlap_rounded_and_tokens_keep_it() -> None:
    rec = QualityRecord(dnsmos_before=MosScore(2, 2, 2), dnsmos_after=MosScore(3, 3, 3),
                        speaker_embedding=np.zeros(256, np.float32),
                        speaker_consistency=None, speaker_parts=1, multi_speaker=False,
                        overlap=0.45678)
    q = rec.to_record()
    assert q.overlap == 0.457 and q.filterable().overlap == 0.457
    assert "overlap" not in json.loads(Quality().to_json())  # absent: not written


def test_tokens_line_has_overlap_and_the_setting_skips(make_settings, codec) -> None:
    s = make_settings(neucodec_model=str(codec.directory), tokenize_device="cpu",
                      filter_max_overlap=0.3)
    segs = {"o_0000": 0.05, "o_0001-1": 0.8, "o_0002": None}
    write_enhanced_tar(Path(s.output_url) / output_key("enhance", s, 7),
                       [(k, 0.6, k) for k in segs],
                       quality={k: _quality(ov) for k, ov in segs.items()})
    stage = TokenizeStage(s)
    stage.codec = codec
    rec = Engine(s, PIPELINE, stage).run(7).record
    out = Path(s.output_url) / "tokens" / "neucodec" / "shard-000007.jsonl"
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert [x["id"] for x in lines] == ["o_0000", "o_0002"]
    assert lines[0]["quality"]["overlap"] == 0.05 and "overlap" not in lines[1]["quality"]
    skipped = rec.stat("skipped") if hasattr(rec, "stat") else rec["skipped"]
    assert [(x["key"], x["reasons"]) for x in skipped] == [("o_0001-1", ["overlap>0.3"])]
    policy = rec.stat("quality_filter") if hasattr(rec, "stat") else rec["quality_filter"]
    assert policy["by_reason"] == {"overlap>0.3": 1} and policy["max_overlap"] == 0.3
