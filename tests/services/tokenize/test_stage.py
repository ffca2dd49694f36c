"""The stage through the real executor: enhanced tar in, exact JSONL out, done record last."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from common.shards.audio import resample
from common.stages.engine import Engine
from services.stages import PIPELINE, output_key
from services.tokenize.stage import TokenizeStage
from tests.services.tokenize.conftest import tone, write_enhanced_tar

SEGMENTS = [("000000051649_0000", 0.6, "hello there"), ("000000051649_0001", 1.0, "こんにちは"),
            ("000000051649_0002", 0.4, "short"), ("000000051650_0000", 0.85, "again"),
            ("000000051650_0001", 0.6, "same length")]


def _setup(make_settings, tmp_path: Path, codec, **kw) -> tuple:
    s = make_settings(tokenize_neucodec_model=str(codec.directory), tokenize_device="cpu",
                      tokenize_batch_seconds=2.0, **kw)
    tar = Path(s.output_url) / output_key("enhance", s, 7)
    bad = {"000000051651_0000": {"flac": b"not audio", "json": b'{"text": "x"}'},
           "000000051651_0001": {"flac": (tmp_path / "none").as_posix().encode()}}
    write_enhanced_tar(tar, SEGMENTS, extra=bad)
    stage = TokenizeStage(s)
    stage.codec = codec  # loaded once per session (the loader has its own tests)
    return s, stage


@pytest.mark.parametrize("policy", ["auto", "stitched"])
def test_shard_to_jsonl_exact_schema(make_settings, tmp_path: Path, codec, policy: str) -> None:
    s, stage = _setup(make_settings, tmp_path, codec, tokenize_batching=policy)
    outcome = Engine(s, PIPELINE, stage).run(7)
    out = Path(s.output_url) / "tokens" / "neucodec" / "shard-000007.jsonl"
    lines = [json.loads(x) for x in out.read_text(encoding="utf-8").splitlines()]
    assert [r["id"] for r in lines] == [k for k, _, _ in SEGMENTS]  # the tar's keys, its order
    for rec, (key, seconds, text) in zip(lines, SEGMENTS):
        assert set(rec) == {"id", "text", "codes", "duration_seconds", "language"}
        assert set(rec["codes"]) == {"neu_tokens"}
        assert rec["text"] == text
        assert type(rec["duration_seconds"]) is float
        assert rec["duration_seconds"] == round(seconds, 2)
        toks = rec["codes"]["neu_tokens"]
        assert all(type(t) is int for t in toks)
        n16 = resample(tone(seconds, 24_000), 24_000, 16_000).shape[0]
        assert len(toks) == n16 // 320
    rec = outcome.record
    assert rec.counts == {"segments": 7, "tokenized": 5, "errors": 2, "skipped": 0,
                             "tokens": sum(len(r["codes"]["neu_tokens"]) for r in lines)}
    assert {e["reason"] for e in rec.stat("errors_sample")} == {"audio:undecodable", "missing_json"}
    assert rec.model_info["tokenizer"] == "neucodec"
    # auto on CPU: exact
    assert rec.model_info["batching"] == ("exact" if policy == "auto" else policy)
    assert rec.stat("padding_waste") <= 0.03
    assert rec.stat("batches") < 5  # equal-length segments shared a batch
    assert abs(rec.audio_seconds_out - sum(x[1] for x in SEGMENTS)) < 0.01
    ledger = Path(s.output_url) / "_ledger" / "tokenize" / "neucodec" / "shard-000007.json"
    assert ledger.is_file()
    assert Engine(s, PIPELINE, stage).run(7).skipped
