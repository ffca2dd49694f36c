"""The enhance stage (RNNoise, real annotation models) writes what trainers need: a
``speaker_id`` per sidecar (two readers taking turns in one file: two labels), and the prosody
fields; digital silence and a square wave kept by a bad ASR line come out as no speech."""

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
from tests.system_packages import POCKETSPHINX, missing

SR = 16000


def _stat(rec, name: str):
    """A figure of the done record, whether it is a dict or a typed record with ``stat``."""
    return rec.stat(name) if hasattr(rec, "stat") else rec[name]


@pytest.fixture(scope="module")
def voices():
    v = sphinx_lines()
    if not v:
        missing(POCKETSPHINX)
    return v, sphinx_texts()


def _line(key: str, spans: list[tuple[float, float]], texts: list[str]) -> str:
    segs = [{"idx": i, "start": a, "end": b, "text": t, "kept": True,
             "min_word_probability": 0.25 + i / 10}
            for i, ((a, b), t) in enumerate(zip(spans, texts))]
    return json.dumps({"key": key, "language": "en", "status": "ok",
                       "duration": spans[-1][1], "segments": segs}) + "\n"


def _member(clips: list[np.ndarray]) -> tuple[np.ndarray, list[tuple[float, float]]]:
    gap = np.zeros(SR // 2, np.float32)
    parts, spans, t = [], [], 0.0
    for c in clips:
        parts += [c, gap]
        spans.append((round(t, 3), round(t + c.size / SR, 3)))
        t += (c.size + gap.size) / SR
    return np.concatenate(parts), spans


def test_speaker_ids_and_prosody_in_the_sidecars(make_settings, tmp_path, voices) -> None:
    (v, t) = voices
    lib, cards = v["librivox"], v["cards"]
    talk, talk_spans = _member([lib[0], cards[0], lib[1], cards[1]])
    solo, solo_spans = _member([lib[2], lib[3]])
    square = np.sign(np.sin(2 * np.pi * 220 * np.arange(6 * SR) / SR)).astype(np.float32)
    members = {"talk": add_noise(talk, 30.0, 1), "solo": add_noise(solo, 30.0, 2),
               "quiet": np.zeros(6 * SR, np.float32), "square": 0.99 * square}
    lines = [_line("talk", talk_spans, [t["librivox"][0], t["cards"][0], t["librivox"][1],
                                        t["cards"][1]]),
             _line("solo", solo_spans, [t["librivox"][2], t["librivox"][3]]),
             _line("quiet", [(0.0, 6.0)], ["thank you"]),
             _line("square", [(0.0, 6.0)], ["you"])]
    raw, out = tmp_path / "raw", tmp_path / "out"
    make_shard(raw / "shard-000000.tar", {k: {"wav": wav_bytes(a)} for k, a in members.items()})
    (out / "asr").mkdir(parents=True)
    (out / "asr/shard-000000.jsonl").write_text("".join(lines))
    s = make_settings(input_url=str(raw), output_url=str(out), enhance_backend="rnnoise",
                      enhance_device="cpu", quality_annotations=True,
                      quality_fidelity_fraction=0.0)
    rec = Engine(s, PIPELINE, EnhanceStage(s)).run(0).record
    with tarfile.open(out / "enhanced/shard-000000.tar") as tf:
        names = [m.name for m in tf]
        metas = {m.name[:-5]: json.loads(tf.extractfile(m).read())
                 for m in tf if m.name.endswith(".json")}
    assert names[:2] == ["talk_0000.flac", "talk_0000.json"]  # still in order, pairs together
    ids = {k: m.get("speaker_id") for k, m in metas.items()}
    assert ids["talk_0000"] == ids["talk_0002"] == "talk#s0"
    assert ids["talk_0001"] == ids["talk_0003"] == "talk#s1"
    assert ids["solo_0000"] == ids["solo_0001"] == "solo#s0"
    assert metas["talk_0001"]["min_word_probability"] == 0.35  # the asr segment's, carried
    for k in ("talk_0000", "talk_0001", "solo_0000"):
        q = metas[k]["quality"]
        assert q["speech_fraction"] > 0.5 and 60 < q["pitch"]["mean"] < 400
        assert q["speaking_rate_unit"] == "chars/s" and 5 < q["speaking_rate"] < 30
        assert q["snr"] > 15
    assert metas["quiet_0000"]["quality"]["speech_fraction"] < 0.1  # the filter default
    # the square wave is a held tone in every pause of its input: the music rule drops it
    # before restoration (it got no tokens before either: speech_fraction 0.0 at tokenize)
    assert "square_0000" not in metas
    assert [(x["key"], x["reasons"]) for x in _stat(rec, "skipped")] == [
        ("square_0000", ["music>0.5"])]
    q = _stat(rec, "quality")
    assert q["speaker_files"] == 3 and q["speakers"] == 4
    counts = _stat(rec, "counts") if isinstance(rec, dict) else rec.counts
    assert counts["errors"] == 0 and counts["segments"] == 7
    assert counts["segments_dropped_early"] == 1
