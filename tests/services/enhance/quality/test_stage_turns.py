"""A kept segment that runs across a turn change comes out of the enhance stage as one segment
per voice (real recordings: pocketsphinx's LibriVox reader and "cards" speaker), its text split
by the asr word times, each piece labelled with its voice; one reader's segment stays whole."""

from __future__ import annotations

import json
import tarfile

import numpy as np

from common.stages.engine import Engine
from fixtures.known_speakers import sphinx_texts
from fixtures.speechgen import add_noise, make_shard, wav_bytes
from services.enhance.stage import EnhanceStage
from services.stages import PIPELINE

SR = 16000
GAP = 0.5


def _words(text: str, start: float, end: float) -> list[dict]:
    """The line's words spread evenly over its time (what matters here: the gap between lines)."""
    ws = text.split()
    step = (end - start) / len(ws)
    return [{"word": f" {w}", "start": round(start + i * step, 3),
             "end": round(start + (i + 1) * step - 0.02, 3), "probability": 0.9}
            for i, w in enumerate(ws)]


def _one_segment(key: str, clips: list[np.ndarray], texts: list[str]) -> tuple[np.ndarray, str]:
    """The clips 0.5 s apart as one member, and an asr line keeping it as one segment."""
    parts, words, t = [], [], 0.0
    for c, text in zip(clips, texts):
        if parts:
            parts.append(np.zeros(int(GAP * SR), np.float32))
            t += GAP
        parts.append(c)
        words += _words(text, t, t + c.size / SR)
        t += c.size / SR
    seg = {"idx": 0, "start": 0.0, "end": round(t, 3), "text": " ".join(texts), "kept": True,
           "words": words, "min_word_probability": 0.9}
    line = {"key": key, "language": "en", "status": "ok", "duration": round(t, 3),
            "segments": [seg]}
    return np.concatenate(parts), json.dumps(line) + "\n"


def test_a_segment_across_a_turn_change_is_cut_per_voice(make_settings, tmp_path,
                                                          sphinx_voices) -> None:
    v, t = sphinx_voices, sphinx_texts()
    lib, cards = v["librivox"], v["cards"]
    talk, talk_line = _one_segment("talk", [lib[0], cards[0], lib[1]],
                                   [t["librivox"][0], t["cards"][0], t["librivox"][1]])
    solo, solo_line = _one_segment("solo", [lib[2], lib[3]], [t["librivox"][2], t["librivox"][3]])
    raw, out = tmp_path / "raw", tmp_path / "out"
    make_shard(raw / "shard-000000.tar", {"talk": {"wav": wav_bytes(add_noise(talk, 30.0, 1))},
                                          "solo": {"wav": wav_bytes(add_noise(solo, 30.0, 2))}})
    (out / "asr").mkdir(parents=True)
    (out / "asr/shard-000000.jsonl").write_text(talk_line + solo_line)
    s = make_settings(input_url=str(raw), output_url=str(out), enhance_backend="rnnoise",
                      enhance_device="cpu", quality_annotations=True,
                      quality_fidelity_fraction=0.0)
    rec = Engine(s, PIPELINE, EnhanceStage(s)).run(0).record
    with tarfile.open(out / "enhanced/shard-000000.tar") as tf:
        metas = {m.name[:-5]: json.loads(tf.extractfile(m).read())
                 for m in tf if m.name.endswith(".json")}
    assert sorted(metas) == ["solo_0000", "talk_0000-1", "talk_0000-2", "talk_0000-3"]
    pieces = [metas[f"talk_0000-{k}"] for k in (1, 2, 3)]
    assert [p["text"] for p in pieces] == [t["librivox"][0], t["cards"][0], t["librivox"][1]]
    first_end = lib[0].size / SR
    assert first_end < pieces[0]["end"] < first_end + GAP  # cut inside the pause
    assert pieces[0]["end"] == pieces[1]["start"] and pieces[-1]["end"] == round(talk.size / SR, 3)
    ids = [p["speaker_id"] for p in pieces]
    assert ids[0] == ids[2] != ids[1]
    assert metas["solo_0000"]["text"] == " ".join(t["librivox"][2:4])  # one voice: whole
    q = rec.stat("quality") if hasattr(rec, "stat") else rec["quality"]
    assert q["cut_segments"] == 1 and q["speaker_changes"] == 2
