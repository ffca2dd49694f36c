"""False drops of every default filter on clean single-voice speech (docs/quality.md, filters).

Each clean set (fixtures/clean_speech.py: recorded LibriVox and card readers, four telephone
prompt voices, game dialogue, the single turns of a two-speaker call; espeak-ng and pyopenjtalk
voices) runs through the pipeline as a user runs it: the asr stage on each file (its own drops:
``no_speech`` and ``language`` for a file, the segment flags such as ``hallucination`` and
``text_coverage``), then the enhance stage (RNNoise, annotations on) on the kept segments, then
tokenize's default :class:`FilterPolicy` on each segment's annotations. Every segment dropped
is a false drop: the voice is one and clean.

One row per filter per set: the share dropped, with the tuned and held-out halves (by file
name, fixed before any threshold was chosen) and the segments under 2 s apart. Goal: <= 1 % of
real segments, <= 5 % of synthetic ones. The wild rows (music beds, music alone, overlap) are
``--only wild``; this module adds none.

``ONSEI_BENCH_DUMP=DIR`` writes each segment's scores and the files' audio there, for choosing a
threshold on the tuned half. ``python -m bench --only filters --json``.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

SR = 16000
SHORT = 2.0  # seconds: a short segment
ASR_LANGUAGES = ["ja", "en", "fr", "it", "ru", "de"]  # each set's own language is asked for
FILTERS = ("no_speech", "language", "hallucination", "text_coverage", "too_short",
           "other asr flags", "multi_speaker", "dnsmos_ovrl", "speech_fraction", "music",
           "overlap")
ASR_FLAGS = ("hallucination", "text_coverage", "too_short")  # named; the rest "other asr flags"
# every rule on, at its default threshold (overlap, off by default, at docs/quality.md's 0.3):
# what each would remove, whichever the defaults switch on
POLICY = {"multi_speaker": True, "min_ovrl": 2.0, "min_speech_fraction": 0.1, "max_music": 0.5,
          "max_overlap": 0.3}
GOAL = {True: 0.01, False: 0.05}  # real, synthetic


@dataclass
class Unit:
    """One segment (or a file asr dropped whole) and why it was dropped (none: kept)."""

    set: str
    file: str
    speaker: str
    half: str
    seconds: float
    reasons: list[str] = field(default_factory=list)
    quality: dict[str, Any] | None = None
    start: float | None = None
    end: float | None = None


def filter_of(reason: str) -> str:
    """Which default filter a reason string belongs to."""
    if reason in ("no_speech", "language", *ASR_FLAGS):
        return reason
    for prefix, name in (("multi_speaker", "multi_speaker"), ("dnsmos_ovrl", "dnsmos_ovrl"),
                         ("speech_fraction", "speech_fraction"), ("music", "music"),
                         ("overlap", "overlap")):
        if reason.startswith(prefix):
            return name
    return "other asr flags"


def _asr_stage(tmp: Path, languages: list[str] | None = None) -> Any:
    from services.asr.settings import AsrSettings
    from services.asr.stage import AsrStage

    stage = AsrStage(AsrSettings(
        asr_model=os.environ.get("ONSEI_ASR_MODEL", "bundled:whisper-base"),
        asr_languages=languages or ASR_LANGUAGES, input_url=str(tmp / "raw"),
        output_url=str(tmp / "out"),
        scratch_dir=str(tmp / "scratch")))
    stage.load()
    return stage


def _enhance_settings() -> Any:
    from services.enhance.settings import EnhanceSettings

    cache = os.environ.get("ONSEI_TEST_MODEL_CACHE", os.path.expanduser("~/.cache/onsei/models"))
    return EnhanceSettings(asr_model="bundled:whisper-base", model_cache=cache,
                           asr_compute_type="int8", enhance_backend="rnnoise",
                           enhance_device="cpu", quality_annotations=True)


def run_set(cs: Any, asr: Any, enhance: Any, tmp: Path) -> list[Unit]:
    """Every unit of one clean set: asr's drops, then each enhanced segment's reasons."""
    from common.shards.members import iter_keys
    from fixtures.speechgen import make_shard, wav_bytes
    from services.records import Sidecar
    from services.tokenize.filter import FilterPolicy

    units: list[Unit] = []
    files = {f.name.replace(".", "-"): f for f in cs.files}
    lines = []
    for key, f in files.items():
        line = asr.transcribe_file(key, f.audio).line
        lines.append(line.to_json())
        if line.status.startswith("dropped"):
            units.append(Unit(cs.name, key, f.speaker, f.half, f.audio.size / SR,
                              [line.status.split(":", 1)[1]]))
            continue
        units += [Unit(cs.name, key, f.speaker, f.half, s.end - s.start,
                       s.reason.split(","), start=s.start, end=s.end)
                  for s in line.segments if not s.kept]
    d = tmp / cs.name.replace(" ", "_")
    make_shard(d / "shard.tar", {k: {"wav": wav_bytes(f.audio)} for k, f in files.items()})
    (d / "asr.jsonl").write_text("".join(x.rstrip("\n") + "\n" for x in lines))
    got = enhance.process(0, {"shard": d / "shard.tar", "asr": d / "asr.jsonl"}, d / "work")
    # what enhance dropped before restoration (the rules on the input: music at its default)
    for x in (got.extra or {}).get("skipped") or []:
        x = x if isinstance(x, dict) else x.to_dict()
        f = files[x["key"].rsplit("_", 1)[0]]
        units.append(Unit(cs.name, x["key"].rsplit("_", 1)[0], f.speaker, f.half,
                          float(x["seconds"]), list(x["reasons"]), x.get("quality")))
    out = next((d / "work" / "out").rglob("*.tar"))
    policy = FilterPolicy(**POLICY)  # type: ignore[arg-type]
    for item in iter_keys(out, None):
        if item.key is None or "json" not in item.files:
            continue
        meta = Sidecar.from_json(item.data("json"))
        f = files[meta.source_key or item.key.rsplit("_", 1)[0]]
        q = meta.quality
        units.append(Unit(cs.name, meta.source_key or "", f.speaker, f.half,
                          float(meta.duration_seconds or 0.0), policy.reasons(q),
                          None if q is None else q.filterable().to_dict(), meta.start, meta.end))
    return units


def _share(units: list[Unit], name: str) -> tuple[int, int]:
    return sum(any(filter_of(r) == name for r in u.reasons) for u in units), len(units)


def _default_on() -> set[str]:
    from services.tokenize.filter import FilterPolicy

    d = FilterPolicy()
    on = {"no_speech", "language", *ASR_FLAGS, "other asr flags"}
    on |= {n for n, v in (("multi_speaker", d.multi_speaker), ("dnsmos_ovrl", d.min_ovrl > 0),
                          ("speech_fraction", d.min_speech_fraction > 0),
                          ("music", d.max_music < 1), ("overlap", d.max_overlap < 1)) if v}
    return on


def met(dropped: int, total: int, short: tuple[int, int], goal: float) -> bool | None:
    """Whether a filter meets its goal on a set: its share of every segment, and of the short
    ones, at most ``goal``; None with no segment."""
    if not total:
        return None
    return dropped / total <= goal and (not short[1] or short[0] / short[1] <= goal)


def rows_of(set_name: str, real: bool, units: list[Unit]) -> list[dict]:
    rows = []
    kind = "real" if real else "synthetic"
    on = _default_on()
    for name in FILTERS:
        d, n = _share(units, name)
        parts = {h: _share([u for u in units if u.half == h], name) for h in ("tune", "held")}
        short = _share([u for u in units if u.seconds < SHORT], name)
        rows.append({
            "name": f"filters: {name}{'' if name in on else ' (off by default)'} false "
                    f"drops, {set_name} ({kind}; tune "
                    f"{parts['tune'][0]}/{parts['tune'][1]}, held {parts['held'][0]}/"
                    f"{parts['held'][1]}, < 2 s {short[0]}/{short[1]})",
            "ours": round(d / n, 4) if n else None, "baseline": None,
            "ratio": round(short[0] / short[1], 4) if short[1] else None,
            "unit": "share dropped (ratio: of < 2 s)", "goal": f"<= {GOAL[real]:.0%}",
            "met": met(d, n, short, GOAL[real])})
    d = sum(any(filter_of(r) in on for r in u.reasons) for u in units)
    rows.append({"name": f"filters: all defaults together, {set_name} ({kind}; {d}/{len(units)} "
                         f"dropped)", "ours": round(d / len(units), 4) if units else None,
                 "baseline": None, "ratio": None, "unit": "share dropped", "goal": "report",
                 "met": None})
    return rows


def _dump(where: str, cs: Any, units: list[Unit]) -> None:
    root = Path(where)
    root.mkdir(parents=True, exist_ok=True)
    tag = cs.name.replace(" ", "_")
    np.savez_compressed(root / f"{tag}.npz",
                        **{f.name.replace(".", "-"): f.audio for f in cs.files})
    (root / f"{tag}.json").write_text(json.dumps(
        {"real": cs.real, "units": [u.__dict__ for u in units]}, default=str))


def filter_rows(quick: bool) -> list[dict]:
    import shutil

    from fixtures.clean_speech import BUILDERS
    from services.enhance.stage import EnhanceStage

    max_clips = 6 if quick else int(os.environ.get("ONSEI_BENCH_CLEAN_CLIPS", "24"))
    only = [s for s in os.environ.get("ONSEI_BENCH_CLEAN_SETS", "").split(",") if s]
    rows: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="onsei-bench-filters-") as d:
        asr = _asr_stage(Path(d))
        enhance = EnhanceStage(_enhance_settings())
        enhance.load()
        for key, build in BUILDERS.items():
            if only and key not in only:
                continue
            if key == "espeak" and shutil.which("espeak-ng") is None:
                continue
            t0 = time.monotonic()
            try:
                cs = build(max_clips)
                if not cs.files:
                    raise RuntimeError("no files (package missing?)")
                units = run_set(cs, asr, enhance, Path(d))
            except Exception as e:  # noqa: BLE001 - one missing set must not hide the others
                rows.append({"name": f"filters: {key} FAILED", "ours": None, "baseline": None,
                             "ratio": None, "goal": str(e)[:80], "unit": ""})
                continue
            if os.environ.get("ONSEI_BENCH_DUMP"):
                _dump(os.environ["ONSEI_BENCH_DUMP"], cs, units)
            rows += rows_of(cs.name, cs.real, units)
            if os.environ.get("ONSEI_BENCH_VERBOSE"):
                print(f"{cs.name}: {len(cs.files)} files, {len(units)} units, "
                      f"{time.monotonic() - t0:.0f} s")
    return rows


def rescored_music(audio: np.ndarray, start: float, end: float) -> float | None:
    """``quality.music`` of ``audio[start:end]`` (its file, 16 kHz) by the music.py in this
    tree, with the file's 0.5 s either side as enhance hands it (the VAD run on the input here,
    on the restored audio in the stage)."""
    from services.enhance.quality.music import Around, context_pieces, music_score
    from services.enhance.quality.prosody import speech_windows

    i, j, c = int(start * SR), int(end * SR), SR // 2
    x = audio[i:j]
    left = np.pad(audio[max(0, i - c):i], (max(0, c - i), 0))
    right = audio[j:j + c]
    left, right = context_pieces(left, np.pad(right, (0, c - right.size)))
    return music_score(x, speech_windows(x),
                       Around(left, speech_windows(left), right, speech_windows(right)))


def rows_from_dump(where: str, rescore: bool = False) -> list[dict]:
    """The rows again from a dump (``ONSEI_BENCH_DUMP``): asr's reasons as they were, each
    enhanced segment judged again by :data:`POLICY` from its annotations; ``rescore``: with
    its music score computed again by :func:`rescored_music`."""
    from services.records import Quality
    from services.tokenize.filter import FilterPolicy

    policy = FilterPolicy(**POLICY)  # type: ignore[arg-type]
    rows = []
    for path in sorted(Path(where).glob("*.json")):
        got = json.loads(path.read_text())
        units = [Unit(**u) for u in got["units"]]
        audio = np.load(path.with_suffix(".npz")) if rescore else None
        for u in units:
            if u.quality is None:
                continue
            if audio is not None and u.start is not None and u.end is not None:
                m = rescored_music(audio[u.file], u.start, u.end)
                u.quality["music"] = None if m is None else round(m, 3)
            u.reasons = policy.reasons(Quality.from_dict(u.quality))
        rows += rows_of(path.stem.replace("_", " "), got["real"], units)
    return rows


ROWS = [filter_rows]

if __name__ == "__main__":
    import sys

    got = (rows_from_dump(sys.argv[2], "--rescore-music" in sys.argv)
           if sys.argv[1:2] == ["--from-dump"] else filter_rows(bool(os.environ.get("QUICK"))))
    for row in got:
        print(json.dumps(row))
