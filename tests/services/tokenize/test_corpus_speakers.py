"""Tokens lines carry the corpus speaker ``onsei speakers`` gave each segment, in shards its
result covers; a labels file the summary promises but the store lacks fails the shard."""

from __future__ import annotations

import json
from pathlib import Path

from common.stages.engine import Engine
from services.speakers.result import SUMMARY_KEY, labels_key
from services.stages import PIPELINE, output_key
from services.tokenize.stage import TokenizeStage
from tests.services.tokenize.conftest import write_enhanced_tar
from tests.speakersfiles import write_labels

SEGS = [("a_0000", 0.6, "one"), ("a_0001", 0.7, "two"), ("b_0000", 0.6, "one")]
LABELS = {"a_0000": ("spk00000003", 0.91), "a_0001": ("spk00000003", 0.88)}


def _engine(make_settings, codec, shards=(3, 4)):
    s = make_settings(tokenize_neucodec_model=str(codec.directory), tokenize_device="cpu")
    for shard in shards:
        write_enhanced_tar(Path(s.output_url) / output_key("enhance", s, shard), SEGS)
    stage = TokenizeStage(s)
    stage.codec = codec
    return s, Engine(s, PIPELINE, stage)


def _lines(s, shard: int) -> dict[str, dict]:
    out = Path(s.output_url) / "tokens" / "neucodec" / f"shard-{shard:06d}.jsonl"
    return {x["id"]: x for x in map(json.loads, out.read_text().splitlines())}


def test_lines_carry_the_corpus_speaker_where_the_result_covers(make_settings, codec) -> None:
    s, engine = _engine(make_settings, codec)
    write_labels(engine.output, s, {3: LABELS})
    rec = engine.run(3).record.to_dict()
    lines = _lines(s, 3)
    assert {k: (v.get("corpus_speaker_id"), v.get("corpus_speaker_confidence"))
            for k, v in lines.items()} == {**LABELS, "b_0000": (None, None)}
    assert rec["stats"]["corpus_speakers"] == {"applied": True, "labels": 2}
    engine.run(4)  # enhanced after the last `onsei speakers`: no label yet
    assert all("corpus_speaker_id" not in v for v in _lines(s, 4).values())


def test_a_missing_labels_file_fails_the_shard_and_names_it(make_settings, codec) -> None:
    s, engine = _engine(make_settings, codec, shards=(3,))
    write_labels(engine.output, s, {3: LABELS})
    engine.output.delete(labels_key(s, 3))
    attempt = engine.attempt(3)
    assert attempt.status == "failed"
    assert "SpeakersResultError" in attempt.reason and SUMMARY_KEY in attempt.reason
    assert not engine.ledger.is_done("tokenize", 3)
