"""The scores a filter rule reads as ``<field> > max`` (``quality.music``: a music bed, on by
default at 0.5, ``ONSEI_FILTER_MAX_MUSIC``; ``quality.overlap``: overlapped talk, off by default,
``ONSEI_FILTER_MAX_OVERLAP``): each reaches the tokens line rounded, the filter skips a segment
above its threshold, and a sidecar without the field (annotated before it existed, or too short
to score) is kept."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from common.stages.engine import Engine
from services.enhance.quality.dnsmos import MosScore
from services.enhance.quality.records import QualityRecord
from services.records import Quality
from services.stages import PIPELINE, output_key
from services.tokenize.filter import FilterPolicy
from services.tokenize.stage import TokenizeStage
from tests.services.tokenize.conftest import passing_quality, write_enhanced_tar

# field -> (its default threshold, the threshold the pipeline test sets: None keeps the default)
SCORES = {"music": (0.5, None), "overlap": (1.0, 0.3)}


def _quality(field: str, value: float | None) -> dict:
    return passing_quality() if value is None else passing_quality(**{field: value})


@pytest.mark.parametrize("field", SCORES)
def test_policy_rule_threshold_off_and_absent(field: str) -> None:
    default, _ = SCORES[field]
    policy = FilterPolicy(**{f"max_{field}": 0.5})
    assert getattr(FilterPolicy(), f"max_{field}") == default
    assert policy.describe()[f"max_{field}"] == 0.5
    assert policy.reasons(_quality(field, 0.91)) == [f"{field}>0.5"]
    assert policy.reasons(_quality(field, 0.5)) == [] and policy.reasons(_quality(field, 0.1)) == []
    assert policy.reasons(_quality(field, None)) == []  # not scored: the rule does not apply
    assert FilterPolicy(**{f"max_{field}": 1.0}).reasons(_quality(field, 1.0)) == []  # off


@pytest.mark.parametrize("field", SCORES)
def test_annotation_writes_the_score_rounded_and_tokens_keep_it(field: str) -> None:
    rec = QualityRecord(dnsmos_before=MosScore(2, 2, 2), dnsmos_after=MosScore(3, 3, 3),
                        speaker_embedding=np.zeros(256, np.float32),
                        speaker_consistency=None, speaker_parts=1, multi_speaker=False,
                        **{field: 0.45678})
    q = rec.to_record()
    assert getattr(q, field) == 0.457 and getattr(q.filterable(), field) == 0.457
    assert field not in json.loads(Quality().to_json())  # absent: not written


@pytest.mark.parametrize("field", SCORES)
def test_tokens_line_has_the_score_and_the_filter_skips(field: str, make_settings,
                                                        codec) -> None:
    _, setting = SCORES[field]
    extra = {} if setting is None else {f"filter_max_{field}": setting}
    s = make_settings(tokenize_neucodec_model=str(codec.directory), tokenize_device="cpu", **extra)
    limit = setting if setting is not None else SCORES[field][0]
    segs = {"m_0000": 0.05, "m_0001-1": 0.93, "m_0002": None}
    write_enhanced_tar(Path(s.output_url) / output_key("enhance", s, 6),
                       [(k, 0.6, k) for k in segs],
                       quality={k: _quality(field, v) for k, v in segs.items()})
    stage = TokenizeStage(s)
    stage.codec = codec
    rec = Engine(s, PIPELINE, stage).run(6).record
    out = Path(s.output_url) / "tokens" / "neucodec" / "shard-000006.jsonl"
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert [x["id"] for x in lines] == ["m_0000", "m_0002"]
    assert lines[0]["quality"][field] == 0.05 and field not in lines[1]["quality"]
    skipped = rec.stat("skipped") if hasattr(rec, "stat") else rec["skipped"]
    assert [(x["key"], x["reasons"]) for x in skipped] == [("m_0001-1", [f"{field}>{limit}"])]
    policy = rec.stat("quality_filter") if hasattr(rec, "stat") else rec["quality_filter"]
    assert policy["by_reason"] == {f"{field}>{limit}": 1}
    assert policy[f"max_{field}"] == limit
