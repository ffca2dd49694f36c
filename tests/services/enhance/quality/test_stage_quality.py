"""The enhance stage with annotations on (RNNoise, real models): every kept segment's sidecar
gets ``quality``; the two-speaker segment is flagged; the done record sums them up."""

from __future__ import annotations

import json
import tarfile

import numpy as np
import pytest

from common.stages.engine import Engine
from fixtures.known_speakers import sphinx_lines, sphinx_texts
from fixtures.speechgen import add_noise, make_shard, wav_bytes
from services.enhance.stage import EnhanceStage
from services.stages import PIPELINE
from tests.services.enhance.helpers import asr_line
from tests.system_packages import POCKETSPHINX, missing


@pytest.fixture(scope="module")
def voices():
    v = sphinx_lines()
    if not v:
        missing(POCKETSPHINX)
    return v, sphinx_texts()


def test_sidecars_carry_the_annotations(make_settings, tmp_path, voices) -> None:
    (v, t), gap = voices, np.zeros(4800, np.float32)
    # Chosen well clear of the threshold after noise + RNNoise (0.91 and 0.70; docs/quality.md).
    members = {
        "one": (np.concatenate([v["librivox"][3], gap, v["librivox"][4]]),
                f'{t["librivox"][3]} {t["librivox"][4]}'),
        "two": (np.concatenate([v["librivox"][0], gap, v["cards"][4]]),
                f'{t["librivox"][0]} {t["cards"][4]}'),
    }
    raw, out = tmp_path / "raw", tmp_path / "out"
    make_shard(raw / "shard-000000.tar", {k: {"wav": wav_bytes(add_noise(a, 20.0, 1))}
                                          for k, (a, _) in members.items()})
    lines = []
    for k, (a, text) in members.items():
        line = asr_line(k, "ok", [(0.0, a.size / 16000, True)], text=text)
        line["segments"][0]["text"] = text
        lines.append(json.dumps(line) + "\n")
    (out / "asr").mkdir(parents=True)
    (out / "asr/shard-000000.jsonl").write_text("".join(lines))
    s = make_settings(input_url=str(raw), output_url=str(out), enhance_backend="rnnoise",
                      enhance_device="cpu", quality_annotations=True,
                      quality_fidelity_fraction=1.0, quality_fidelity_model="bundled:whisper-base",
                      asr_compute_type="int8")
    stage = EnhanceStage(s)
    rec = Engine(s, PIPELINE, stage).run(0).record
    with tarfile.open(out / "enhanced/shard-000000.tar") as tf:
        metas = {m.name[:-5]: json.loads(tf.extractfile(m).read())
                 for m in tf if m.name.endswith(".json")}
    q = {k.split("_")[0]: m["quality"] for k, m in metas.items()}
    print(json.dumps({k: {f: x[f] for f in x if f != "speaker_embedding"} for k, x in q.items()}))
    assert set(q) == {"one", "two"}
    assert q["one"]["multi_speaker"] is False and q["two"]["multi_speaker"] is True
    for x in q.values():
        assert len(x["speaker_embedding"]) == 256
        assert 1.0 <= x["dnsmos_before"]["ovrl"] <= 5.0 and 1.0 <= x["dnsmos_after"]["ovrl"] <= 5.0
        assert x["dnsmos_delta"]["bak"] == pytest.approx(
            x["dnsmos_after"]["bak"] - x["dnsmos_before"]["bak"], abs=2e-3)
        assert x["fidelity_cer"] is not None and "fidelity_text" in x
    assert q["one"]["fidelity_cer"] < s.quality_fidelity_cer
    assert q["one"]["restoration_changed_text"] is False
    summary = rec.stat("quality")
    assert summary["annotated"] == 2 and summary["multi_speaker"] == 1
    assert summary["fidelity_checked"] == 2 and summary["seconds"] > 0
    assert rec.counts["errors"] == 0
    assert "quality" in stage.model_info()
    # the models that scored it and the counts of what they found, both kept (named blocks)
    assert rec.model_info["quality"]["dnsmos"].startswith("speechmos")
    assert rec.model_info["quality"]["speaker_threshold"] == s.quality_speaker_threshold


def test_an_annotation_failure_keeps_the_audio_and_records_why(make_settings, tmp_path,
                                                               monkeypatch, voices) -> None:
    from services.enhance.quality.annotate import Annotator

    def boom(self, items, resampled=None):
        raise RuntimeError("scorer exploded")

    monkeypatch.setattr(Annotator, "annotate", boom)
    a = voices[0]["librivox"][0]
    raw, out = tmp_path / "raw", tmp_path / "out"
    make_shard(raw / "shard-000000.tar", {"x": {"wav": wav_bytes(a)}})
    (out / "asr").mkdir(parents=True)
    (out / "asr/shard-000000.jsonl").write_text(
        json.dumps(asr_line("x", "ok", [(0.0, a.size / 16000, True)])) + "\n")
    s = make_settings(input_url=str(raw), output_url=str(out), enhance_backend="none",
                      quality_annotations=True, quality_fidelity_fraction=0.0)
    rec = Engine(s, PIPELINE, EnhanceStage(s)).run(0).record
    assert rec.counts["segments"] == 1 and rec.counts["errors"] == 1
    assert rec.stat("errors") == [
        {"key": "x_0000", "reason": "quality:RuntimeError:scorer exploded"}]
    with tarfile.open(out / "enhanced/shard-000000.tar") as tf:
        meta = json.loads(tf.extractfile("x_0000.json").read())
    assert "quality" not in meta
