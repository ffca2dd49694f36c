"""Model seconds spent on segments that are dropped later, before and after the filter rules
on the input audio moved ahead of restoration (services/enhance/early.py, docs/quality.md,
"filter rules").

One shard mixes what a podcast or video holds: single real voices (pocketsphinx-testdata's
LibriVox reader and "cards" speaker), two of them talking at once (the mixtures the overlap
test is measured on), and music (fixtures/nonspeech.py tracks) alone and under a voice. The
enhance stage (RNNoise on the CPU, every annotation on) runs it twice with
``ONSEI_FILTER_MAX_OVERLAP=0.3`` and the music rule at its default (0.5): *before*, as onsei did,
every kept asr segment is restored and annotated and the rules apply at tokenize (the enhance run
with the early rules off); *after*, the early rules drop what they can before the model. Each
run's restoration and annotation seconds are shared out over its segments by their audio
seconds; the segments the full policy drops (tokenize's verdict on the sidecars, plus what
enhance dropped) are the waste. Per hour of kept asr input.

- model s / input h on segments the overlap rule drops (``overlap>0.3``); goal 0 after;
- model s / input h on segments the music rule drops (``music>0.5``, its pauses found by Silero
  on the input); goal 0 after;
- model s / input h on every segment dropped later, the rules on the restored audio included.

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
EARLY = {"overlap": "overlap>", "music": "music>"}  # the pre-restoration rules, by reason


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
                         filter_max_overlap=LIMIT if early else 1.0,
                         **({} if early else {"filter_max_music": 1.0}))
    new = EnhanceStage(s)
    if stage is not None:  # the models loaded once
        new._backend, new._annotator = stage._backend, stage._annotator
        new._signature_powers = stage._signature_powers
    rec = Engine(s, PIPELINE, new).run(0).record
    policy = FilterPolicy.from_settings(s.model_copy(update={
        "filter_max_overlap": LIMIT, "filter_max_music": PipelineSettings().filter_max_music}))
    import tarfile

    restored = dropped_all = 0.0
    dropped = dict.fromkeys(EARLY, 0.0)
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
            for name, prefix in EARLY.items():
                dropped[name] += seconds if any(r.startswith(prefix) for r in why) else 0.0
    spent = rec.model_seconds + float(rec.stat("quality")["seconds"])
    by_reason = (rec.stats.get("quality_filter") or {}).get("by_reason", {})
    return new, {"spent": spent, "restored": restored, "dropped_all": dropped_all,
                 **{f"dropped_{k}": v for k, v in dropped.items()},
                 **{f"early_{k}": float(sum(n for r, n in by_reason.items() if r.startswith(p)))
                    for k, p in EARLY.items()},
                 "early": float(rec.counts.get("segments_dropped_early", 0))}


def rows(quick: bool) -> list[dict]:
    from services.stages import PipelineSettings

    members = _members(quick)
    hours = sum(a.size for a in members.values()) / SR / 3600
    with tempfile.TemporaryDirectory(prefix="onsei-bench-early-") as tmp:
        stage, before = _run(Path(tmp) / "before", members, False, None)
        _, after = _run(Path(tmp) / "after", members, True, stage)

    def per_hour(r: dict[str, float], key: str) -> float:
        share = r[key] / r["restored"] if r["restored"] else 0.0
        return round(r["spent"] * share / hours, 1)

    b_all, a_all = per_hour(before, "dropped_all"), per_hour(after, "dropped_all")
    n = len(members)
    unit = "s per input hour (restore + annotate, RNNoise, CPU)"
    out = []
    for name, prefix in EARLY.items():
        b, a = per_hour(before, f"dropped_{name}"), per_hour(after, f"dropped_{name}")
        limit = LIMIT if name == "overlap" else PipelineSettings().filter_max_music
        out.append({"name": f"filters_early: model s / input h on segments the {name} rule "
                            f"drops ({prefix}{limit:g}; {n} segments, "
                            f"{int(after[f'early_{name}'])} dropped before restoration)",
                    "ours": a, "baseline": b, "ratio": round(b / a, 1) if a else "inf",
                    "goal": "ours 0", "unit": unit})
    out.append({"name": "filters_early: model s / input h on every segment dropped later "
                        "(the rules on the restored audio included)",
                "ours": a_all, "baseline": b_all,
                "ratio": round(b_all / a_all, 2) if a_all else "inf",
                "goal": "ours < baseline", "unit": unit})
    return out


ROWS = [rows]

if __name__ == "__main__":
    for row in rows(quick=True):
        print(row)
