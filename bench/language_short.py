"""Language ID of short lone clips, both ways: clean clips in a language asked for that the asr
stage drops (``language``), and clips in a language not asked for that it keeps.

Each clip of fixtures/short_languages.py (real prompt voices in five languages, espeak-ng lines
in seven; 0.6-4 s, each a file of its own) goes through the asr stage's own language ID (VAD,
the windows it picks, Whisper's distributions), stopped before decoding. The stage's decision
(:func:`services.asr.langid.kept_language`) is then taken for several sets of languages asked
for, so each clip is a target for some and a non-target for others: the clean bench's six
(``ja en fr it ru de``), the default two (``ja en``), and ``ja fr``, ``en es``, ``ru``,
``it de``. Rows per half (``tune``, ``held``: a hash of the clip's name), per kind (real,
synthetic) and per length (under 2 s, 2-4 s). Goal: <= 1 % of real target clips dropped (5 %
synthetic); the non-target clips kept are reported beside them (a rule that keeps more clean
clips must not keep more of these: docs/quality.md has the ones tried).

``python -m bench --only language_short --json`` or ``python -m bench.language_short``
(``ONSEI_BENCH_LID_CLIPS``: prompts per voice, 30; ``ONSEI_BENCH_LID_HALVES``: ``tune``,
``held`` or both; ``ONSEI_BENCH_LID_DUMP=FILE``: the distributions, for trying a rule on the
tune half; ``ONSEI_ASR_MODEL``: the Whisper model, a size name, hub id or local CTranslate2
folder, bundled Whisper base when unset).
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

KEPT_SETS = {"six": ["ja", "en", "fr", "it", "ru", "de"], "default": ["ja", "en"],
             "ja fr": ["ja", "fr"], "en es": ["en", "es"], "ru": ["ru"], "it de": ["it", "de"]}
GOAL = {True: 0.01, False: 0.05}  # target clips dropped: real, synthetic
SHORT = 2.0  # seconds: the rows split clips under and over this


@dataclass
class Looked:
    """One clip's language ID as the stage made it: the head's guess and each window's."""

    name: str
    language: str
    real: bool
    half: str
    seconds: float
    guess: Any  # services.asr.langid.LanguageGuess; None: no speech found
    dists: list[list[tuple[str, float]]]


def look(clips: list[Any]) -> list[Looked]:
    """Each clip's language ID by the asr stage (``ONSEI_ASR_MODEL``), stopped before its
    transcription: the stage's decision is swapped for one that records what it was given and
    drops the file, so each set of languages asked for is judged on the same look."""
    from bench.filters import _asr_stage
    from services.asr import langid

    seen: list[tuple[Any, list[list[tuple[str, float]]]]] = []
    real_rule = langid.kept_language

    def record(guess: Any, dists: list[list[tuple[str, float]]], kept: list[str],
               threshold: float) -> str | None:
        seen.append((guess, dists))
        return None

    out: list[Looked] = []
    with tempfile.TemporaryDirectory(prefix="onsei-bench-lid-") as d:
        stage = _asr_stage(Path(d))
        langid.kept_language = record  # type: ignore[assignment]
        try:
            for c in clips:
                seen.clear()
                stage.transcribe_file(c.name.replace(".", "-"), c.audio)
                guess, dists = seen[0] if seen else (None, [])
                out.append(Looked(c.name, c.language, c.real, c.half, c.seconds, guess, dists))
        finally:
            langid.kept_language = real_rule  # type: ignore[assignment]
    return out


def counts(looked: list[Looked], threshold: float = 0.5) -> dict[str, list[int]]:
    """Per (real/synthetic, half, under/over 2 s): [target dropped, targets, non-target kept,
    non-targets] over every set of languages asked for, by the stage's rule."""
    from services.asr.langid import kept_language

    out: dict[str, list[int]] = {}
    for kept in KEPT_SETS.values():
        for x in looked:
            key = (f"{'real' if x.real else 'synthetic'} {x.half}, "
                   f"{'< 2 s' if x.seconds < SHORT else '2-4 s'}")
            c = out.setdefault(key, [0, 0, 0, 0])
            keeps = x.guess is not None and kept_language(
                x.guess, x.dists, kept, threshold) is not None
            if x.language in kept:
                c[0] += not keeps
                c[1] += 1
            else:
                c[2] += keeps
                c[3] += 1
    return out


def rows_of(looked: list[Looked]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for key, (d, n, k, m) in sorted(counts(looked).items()):
        real = key.startswith("real")
        rows.append({"name": f"language ID, short lone clips ({key}): target clips dropped "
                             f"{d}/{n}", "ours": round(d / n, 4) if n else None,
                     "baseline": None, "ratio": None, "unit": "share dropped",
                     "goal": f"<= {GOAL[real]:.0%}", "met": d / n <= GOAL[real] if n else None})
        rows.append({"name": f"language ID, short lone clips ({key}): non-target clips kept "
                             f"{k}/{m}", "ours": round(k / m, 4) if m else None,
                     "baseline": None, "ratio": None, "unit": "share kept", "goal": "report",
                     "met": None})
    return rows


def language_rows(quick: bool) -> list[dict[str, Any]]:
    from fixtures.short_languages import espeak_clips, prompt_clips

    per_voice = int(os.environ.get("ONSEI_BENCH_LID_CLIPS", "6" if quick else "30"))
    halves = [h for h in os.environ.get("ONSEI_BENCH_LID_HALVES", "tune,held").split(",") if h]
    clips = [c for c in prompt_clips(per_voice, first=0 if quick else 16) + espeak_clips()
             if c.half in halves]
    looked = look(clips)
    if os.environ.get("ONSEI_BENCH_LID_DUMP"):  # the distributions, for trying a rule
        Path(os.environ["ONSEI_BENCH_LID_DUMP"]).write_text(json.dumps(
            [{"name": x.name, "language": x.language, "real": x.real, "half": x.half,
              "seconds": x.seconds, "shares": None if x.guess is None else x.guess.shares,
              "dists": x.dists} for x in looked]))
    return rows_of(looked)


ROWS = [language_rows]

if __name__ == "__main__":
    for row in language_rows(bool(os.environ.get("QUICK"))):
        print(json.dumps(row))
