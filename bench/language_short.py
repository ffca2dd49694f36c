"""Language ID of short lone clips, both ways: clean clips in a language asked for that the asr
stage drops (``language``), and clips in a language not asked for that it keeps.

Each clip of fixtures/short_languages.py (real prompt voices in five languages, espeak-ng lines
in seven; 0.6-4 s, each a file of its own) goes through the asr stage's own language ID (VAD,
the windows it picks, Whisper's distributions), stopped before decoding. The stage's decision
(:func:`services.asr.langid.kept_language`) is then taken for several sets of languages asked
for, so each clip is a target for some and a non-target for others: the clean bench's six
(``ja en fr it ru de``), the default two (``ja en``), and ``ja fr``, ``en es``, ``ru``,
``it de``. Rows per half (``tune``, ``held``: a hash of the clip's name) and per kind (real,
synthetic). Goal: <= 1 % of real target clips dropped (5 % synthetic); non-target clips kept:
no more than the rule before (``ONSEI_BENCH_LID_BASELINE``, reported side by side).

``python -m bench --only language_short --json`` or ``python -m bench.language_short``
(``ONSEI_BENCH_LID_CLIPS``: prompts per voice, 30; ``ONSEI_BENCH_LID_DUMP=FILE``: the
distributions, for choosing a value on the tune half).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

KEPT_SETS = {"six": ["ja", "en", "fr", "it", "ru", "de"], "default": ["ja", "en"],
             "ja fr": ["ja", "fr"], "en es": ["en", "es"], "ru": ["ru"], "it de": ["it", "de"]}
GOAL = {True: 0.01, False: 0.05}  # target clips dropped: real, synthetic


@dataclass
class Looked:
    """One clip's language ID as the stage made it: the head's guess, each window's, and what
    the second opinion (services/asr/langcheck.py) would be given."""

    name: str
    language: str
    real: bool
    half: str
    seconds: float
    guess: Any  # services.asr.langid.LanguageGuess; None: no speech found
    dists: list[list[tuple[str, float]]]
    speech: float = 0.0  # the head's speech seconds
    whole: bool = False  # the head is the whole file
    decode: Callable[[str], float] | None = None  # language -> avg_logprob, cached
    logprobs: dict[str, float] = field(default_factory=dict)

    def decoded(self, language: str) -> float:
        if language not in self.logprobs:
            assert self.decode is not None
            self.logprobs[language] = self.decode(language)
        return self.logprobs[language]


def look(clips: list[Any]) -> list[Looked]:
    """Each clip's language ID by the asr stage (bundled Whisper base), stopped before its
    transcription: the stage's two decisions are swapped for ones that record what they were
    given and drop the file, so each set of languages asked for is judged on the same look."""
    from bench.filters import _asr_stage
    from services.asr import langcheck, langid

    seen: list[tuple[Any, list[list[tuple[str, float]]]]] = []
    second: list[tuple[float, bool, Callable[[str], float]]] = []
    real_rule, real_second = langid.kept_language, langcheck.second_opinion

    def record(guess: Any, dists: list[list[tuple[str, float]]], kept: list[str],
               threshold: float) -> str | None:
        seen.append((guess, dists))
        return None

    def record_second(guess: Any, kept: list[str], speech: float, whole: bool,
                      decode: Callable[[str], float], margin: float = 0.0) -> str | None:
        second.append((speech, whole, decode))
        return None

    out: list[Looked] = []
    with tempfile.TemporaryDirectory(prefix="onsei-bench-lid-") as d:
        stage = _asr_stage(Path(d))
        langid.kept_language = record  # type: ignore[assignment]
        langcheck.second_opinion = record_second  # type: ignore[assignment]
        try:
            for c in clips:
                seen.clear()
                second.clear()
                stage.transcribe_file(c.name.replace(".", "-"), c.audio)
                guess, dists = seen[0] if seen else (None, [])
                speech, whole, decode = second[0] if second else (0.0, False, None)
                out.append(Looked(c.name, c.language, c.real, c.half, c.seconds, guess, dists,
                                  speech, whole, decode))
        finally:
            langid.kept_language = real_rule  # type: ignore[assignment]
            langcheck.second_opinion = real_second  # type: ignore[assignment]
    return out


def keeps(x: Looked, kept: list[str], second: bool, margin: float) -> bool:
    """Whether the stage keeps clip ``x`` when ``kept`` are asked for: its distributions, then
    (``second``) the second opinion of its decodes."""
    from services.asr.langcheck import second_opinion
    from services.asr.langid import kept_language

    if x.guess is None:
        return False
    if kept_language(x.guess, x.dists, kept, 0.5) is not None:
        return True
    return second and x.decode is not None and second_opinion(
        x.guess, kept, x.speech, x.whole, x.decoded, margin) is not None


def counts(looked: list[Looked], second: bool, margin: float) -> dict[str, list[int]]:
    """Per (real/synthetic, half): [target dropped, targets, non-target kept, non-targets]
    over every set of languages asked for."""
    out: dict[str, list[int]] = {}
    for kept in KEPT_SETS.values():
        for x in looked:
            c = out.setdefault(f"{'real' if x.real else 'synthetic'} {x.half}", [0, 0, 0, 0])
            k = keeps(x, kept, second, margin)
            if x.language in kept:
                c[0] += not k
                c[1] += 1
            else:
                c[2] += k
                c[3] += 1
    return out


def rows_of(looked: list[Looked], margin: float) -> list[dict[str, Any]]:
    """Rows with the second opinion, the distributions alone side by side (the baseline)."""
    ours, base = counts(looked, True, margin), counts(looked, False, margin)
    rows: list[dict[str, Any]] = []
    for key in sorted(ours):
        d, n, k, m = ours[key]
        bd, _, bk, _ = base[key]
        real = key.startswith("real")
        rows.append({"name": f"language ID, short lone clips ({key}): target clips dropped "
                             f"{d}/{n} (distributions alone: {bd}/{n})",
                     "ours": round(d / n, 4) if n else None,
                     "baseline": round(bd / n, 4) if n else None, "ratio": None,
                     "unit": "share dropped", "goal": f"<= {GOAL[real]:.0%}",
                     "met": d / n <= GOAL[real] if n else None})
        rows.append({"name": f"language ID, short lone clips ({key}): non-target clips kept "
                             f"{k}/{m} (distributions alone: {bk}/{m})",
                     "ours": round(k / m, 4) if m else None,
                     "baseline": round(bk / m, 4) if m else None, "ratio": None,
                     "unit": "share kept", "goal": "<= distributions alone",
                     "met": k <= bk if m else None})
    return rows


def language_rows(quick: bool) -> list[dict]:
    from fixtures.short_languages import espeak_clips, prompt_clips
    from services.asr.langcheck import MARGIN

    per_voice = int(os.environ.get("ONSEI_BENCH_LID_CLIPS", "6" if quick else "30"))
    halves = [h for h in os.environ.get("ONSEI_BENCH_LID_HALVES", "tune,held").split(",") if h]
    clips = [c for c in prompt_clips(per_voice, first=0 if quick else 16) + espeak_clips()
             if c.half in halves]
    looked = look(clips)
    rows = rows_of(looked, MARGIN)
    if os.environ.get("ONSEI_BENCH_LID_DUMP"):  # every decode the rows made, for tuning
        Path(os.environ["ONSEI_BENCH_LID_DUMP"]).write_text(json.dumps(
            [{"name": x.name, "language": x.language, "real": x.real, "half": x.half,
              "seconds": x.seconds, "speech": x.speech, "whole": x.whole,
              "shares": None if x.guess is None else x.guess.shares, "dists": x.dists,
              "logprobs": x.logprobs} for x in looked]))
    return rows


ROWS = [language_rows]

if __name__ == "__main__":
    for row in language_rows(bool(os.environ.get("QUICK"))):
        print(json.dumps(row))
