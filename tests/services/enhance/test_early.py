"""The filter rules on the input audio, applied before restoration (services/enhance/early.py):
with ``ONSEI_FILTER_MAX_OVERLAP`` on, a segment where two real voices talk at once is dropped
before the model runs (no audio of it goes in, nothing of it is written), the done record says
why in tokenize's shape; enhanced again with the rule off, the same segment is restored and
its sidecar carries the very score the early rule read. The dataset card counts it under
enhance."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

import numpy as np
import pytest

from common.stages.engine import Engine
from fixtures.known_speakers import sphinx_lines
from fixtures.speechgen import make_shard, wav_bytes
from services.enhance.quality.overlap import PitchTest, overlap
from services.enhance.stage import EnhanceStage
from services.ops.export.run import export
from services.ops.export.write import SplitPlan
from services.stages import PIPELINE
from tests.services.enhance.helpers import asr_line
from tests.system_packages import POCKETSPHINX, missing

SR = 16000


def _rms(x: np.ndarray) -> float:
    return float(np.sqrt(np.mean(np.square(x))))


@pytest.fixture(scope="module")
def talk() -> dict[str, np.ndarray]:
    """One voice alone and the two-voice mixture the pitch test scores highest."""
    v = sphinx_lines()
    if not v:
        missing(POCKETSPHINX)
    a = v["librivox"][3]
    mixes = []
    for b in v["cards"][:3]:
        n = min(a.size, b.size)
        mixes.append((a[:n] + b[:n] * (_rms(a[:n]) / _rms(b[:n]))).astype(np.float32) * 0.5)
    scores = [overlap(x) for x in mixes]
    both = mixes[int(np.argmax([x if x is not None else 0.0 for x in scores]))]
    alone, two = overlap(a), overlap(both)
    assert alone is not None and two is not None and alone < 0.15 and two > 0.45  # well apart
    return {"clean": a, "both": both}


def _run(make_settings, root: Path, talk: dict[str, np.ndarray], stage: EnhanceStage | None,
         **over) -> tuple[EnhanceStage, object, dict[str, dict], object]:
    raw, out = root / "raw", root / "out"
    make_shard(raw / "shard-000000.tar", {k: {"wav": wav_bytes(a)} for k, a in talk.items()})
    (out / "asr").mkdir(parents=True)
    (out / "asr/shard-000000.jsonl").write_text("".join(
        json.dumps(asr_line(k, "ok", [(0.0, a.size / SR, True)])) + "\n"
        for k, a in talk.items()))
    s = make_settings(input_url=str(raw), output_url=str(out), enhance_backend="rnnoise",
                      enhance_device="cpu", quality_annotations=True,
                      quality_fidelity_fraction=0.0, **over)
    new = EnhanceStage(s)
    if stage is not None:  # the models already loaded
        new._backend, new._annotator = stage._backend, stage._annotator
        new._signature_powers = stage._signature_powers
    rec = Engine(s, PIPELINE, new).run(0).record
    with tarfile.open(out / "enhanced/shard-000000.tar") as tf:
        metas = {m.name[:-5]: json.loads(tf.extractfile(m).read())
                 for m in tf if m.name.endswith(".json")}
    return new, rec, metas, s


def test_overlap_drops_before_restoration_and_a_rerun_restores(make_settings, tmp_path,
                                                                talk, monkeypatch) -> None:
    calls: list[int] = []
    found = PitchTest.frames

    def counted(self, x, rate, rs):  # type: ignore[no-untyped-def]
        calls.append(x.size)
        return found(self, x, rate, rs)

    monkeypatch.setattr(PitchTest, "frames", counted)
    stage, rec, metas, s = _run(make_settings, tmp_path / "on", talk, None,
                                filter_max_overlap=0.3)
    assert [k.split("_")[0] for k in metas] == ["clean"]
    # no audio of the dropped segment went into the model
    assert rec.audio_seconds_in == pytest.approx(talk["clean"].size / SR, abs=0.01)
    assert rec.counts["segments_dropped_early"] == 1 and rec.counts["segments"] == 1
    skipped = rec.stat("skipped")
    assert [(x["key"], x["reasons"]) for x in skipped] == [("both_0000", ["overlap>0.3"])]
    early_score = skipped[0]["quality"]["overlap"]
    assert early_score > 0.3
    assert rec.stat("skipped_tally")["segments_by_reason"] == {"overlap>0.3": 1}
    policy = rec.stat("quality_filter")
    assert policy["max_overlap"] == 0.3 and policy["by_reason"] == {"overlap>0.3": 1}
    assert metas["clean_0000"]["quality"]["overlap"] <= 0.3
    assert len(calls) == 2  # once a segment: the kept one's frames are not found again
    # the dataset card says where it went
    export(s, s.output_url, str(tmp_path / "set"), tokens=False,
           plan=SplitPlan(validation_fraction=0.0))
    assert "| `overlap>0.3` | enhance | 1 |" in (tmp_path / "set/README.md").read_text()

    # the rule off: the same asr output, nothing decoded again by asr, the segment restored
    _, rec2, metas2, _ = _run(make_settings, tmp_path / "off", talk, stage)
    assert sorted(k.split("_")[0] for k in metas2) == ["both", "clean"]
    assert metas2["both_0000"]["quality"]["overlap"] == early_score  # the same score, same rule
    assert rec2.counts["segments_dropped_early"] == 0
    # the music rule (on by default) still applies before restoration: it dropped nothing
    assert not rec2.stat("skipped") and rec2.stat("quality_filter")["by_reason"] == {}
