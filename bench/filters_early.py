"""Model seconds spent on segments that are dropped later, before and after the filter rules
on the input audio moved ahead of restoration (services/enhance/early.py, docs/quality.md,
"filter rules").

One shard mixes what a podcast or video holds: single real voices (pocketsphinx-testdata's
LibriVox reader and "cards" speaker), two of them talking at once (the mixtures the overlap
test is measured on), and music (fixtures/nonspeech.py tracks) alone and under a voice. The
enhance stage (RNNoise on the CPU, every annotation on) runs it twice with
``ONSEI_FILTER_MAX_OVERLAP=0.3``: *before*, as onsei did, every kept asr segment is restored and
annotated and the rules apply at tokenize (the enhance run with the early rules off); *after*,
the early rules drop what they can before the model. Each run's restoration and annotation
seconds are shared out over its segments by their audio seconds; the segments the full policy
drops (tokenize's verdict on the sidecars, plus what enhance dropped) are the waste. Per hour of
kept asr input.

- model s / input h on segments a pre-restoration rule drops (``overlap>0.3``); goal 0 after;
- model s / input h on every segment dropped later (the music rule still applies after
  restoration: its pauses come from the restored audio, docs/quality.md).

``python -m bench --only filters_early``.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

SR = 16000
LIMIT = 0.3  # ONSEI_FILTER_MAX_OVERLAP in both runs


def _rms(x: np.ndarray) -> float:
    return float(np.sqrt(np.mean(np.square(x))))


def _members(quick: bool) -> dict[str, np.ndarray]:
    from fixtures.known_speakers import sphinx_lines
    from fixtures.nonspeech import music_tracks

    v = sphinx_lines()
    out: dict[str, np.ndarray] = {}
    n_each = 3 if quick else 5
    for i in range(n_each):
        out[f"clean{i}"] = v["librivox"][i]
        out[f"cards{i}"] = v["cards"][i]
    for i in range(n_each):  # two voices at once, at one level
        a, b = v["librivox"][i], v["cards"][(i + 1) % len(v["cards"])]
        n = min(a.size, b.size)
        out[f"both{i}"] = (0.5 * (a[:n] + b[:n] * (_rms(a[:n]) / _rms(b[:n])))).astype(np.float32)
    tracks = [a[20 * SR:] for _, a in music_tracks(max_seconds=60)][:n_each]
    for i, t in enumerate(tracks):
        out[f"music{i}"] = (0.3 * t[:6 * SR] / max(np.abs(t[:6 * SR]).max(), 1e-6)).astype(
            np.float32)
        x = v["librivox"][i]
        bed = t[:x.size] * (_rms(x) / max(_rms(t[:x.size]), 1e-9))  # 0 dB
        out[f"bed{i}"] = (0.5 * (x + bed)).astype(np.float32)
    return out


def _line(key: str, seconds: float) -> str:
    seg = {"idx": 0, "start": 0.0, "end": round(seconds, 3), "text": "speech", "kept": True,
           "avg_logprob": -0.2, "no_speech_prob": 0.01, "compression_ratio": 1.2, "reason": None}
    return json.dumps({"key": key, "language": "en", "language_probability": 0.99,
                       "status": "ok", "duration": seconds, "segments": [seg]}) + "\n"


def _run(root: Path, members: dict[str, np.ndarray], early: bool,
         stage: Any | None) -> tuple[Any, dict[str, float]]:
    """One enhance run; the later-dropped and the restored seconds, and the model seconds."""
    from common.stages.engine import Engine
    from fixtures.speechgen import make_shard, wav_bytes
    from services.enhance.stage import EnhanceStage
    from services.records import Sidecar
    from services.rules.policy import FilterPolicy
    from services.stages import PIPELINE, PipelineSettings

    raw, out = root / "raw", root / "out"
    make_shard(raw / "shard-000000.tar", {k: {"wav": wav_bytes(a)} for k, a in members.items()})
    (out / "asr").mkdir(parents=True)
    (out / "asr/shard-000000.jsonl").write_text(
        "".join(_line(k, a.size / SR) for k, a in members.items()))
    s = PipelineSettings(input_url=str(raw), output_url=str(out), scratch_dir=str(root / "tmp"),
                         enhance_backend="rnnoise", enhance_device="cpu",
                         quality_annotations=True, quality_fidelity_fraction=0.0,
                         filter_max_overlap=LIMIT if early else 1.0)
    new = EnhanceStage(s)
    if stage is not None:  # the models loaded once
        new._backend, new._annotator = stage._backend, stage._annotator
        new._signature_powers = stage._signature_powers
    rec = Engine(s, PIPELINE, new).run(0).record
    policy = FilterPolicy.from_settings(s.model_copy(update={"filter_max_overlap": LIMIT}))
    import tarfile

    restored = dropped_input = dropped_all = 0.0
    with tarfile.open(out / "enhanced/shard-000000.tar") as tf:
        for m in tf:
            if not m.name.endswith(".json"):
                continue
            meta = Sidecar.from_json(tf.extractfile(m).read())  # type: ignore[union-attr]
            seconds = float(meta.duration_seconds or 0.0)
            restored += seconds
            why = policy.reasons(meta.quality)
            if why:
                dropped_all += seconds
            if any(r.startswith("overlap>") for r in why):
                dropped_input += seconds
    spent = rec.model_seconds + float(rec.stat("quality")["seconds"])
    return new, {"spent": spent, "restored": restored, "dropped_input": dropped_input,
                 "dropped_all": dropped_all,
                 "early": float(rec.counts.get("segments_dropped_early", 0))}


def rows(quick: bool) -> list[dict]:
    members = _members(quick)
    hours = sum(a.size for a in members.values()) / SR / 3600
    with tempfile.TemporaryDirectory(prefix="onsei-bench-early-") as tmp:
        stage, before = _run(Path(tmp) / "before", members, False, None)
        _, after = _run(Path(tmp) / "after", members, True, stage)

    def per_hour(r: dict[str, float], key: str) -> float:
        share = r[key] / r["restored"] if r["restored"] else 0.0
        return round(r["spent"] * share / hours, 1)

    b_in, a_in = per_hour(before, "dropped_input"), per_hour(after, "dropped_input")
    b_all, a_all = per_hour(before, "dropped_all"), per_hour(after, "dropped_all")
    n = len(members)
    return [
        {"name": f"filters_early: model s / input h on segments a pre-restoration rule drops "
                 f"(overlap>{LIMIT:g}; {n} segments, {int(after['early'])} dropped early)",
         "ours": a_in, "baseline": b_in, "ratio": round(b_in / a_in, 1) if a_in else "inf",
         "goal": "ours 0", "unit": "s per input hour (restore + annotate, RNNoise, CPU)"},
        {"name": "filters_early: model s / input h on every segment dropped later "
                 "(music still after restoration)",
         "ours": a_all, "baseline": b_all,
         "ratio": round(b_all / a_all, 2) if a_all else "inf",
         "goal": "ours < baseline", "unit": "s per input hour (restore + annotate, RNNoise, CPU)"},
    ]


ROWS = [rows]

if __name__ == "__main__":
    for row in rows(quick=True):
        print(row)
