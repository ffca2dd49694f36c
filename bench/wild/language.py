"""Language per segment on files that switch languages (a Japanese show with English turns, and
the reverse), as podcasts and videos do.

Files are spliced from blocks of one language each: espeak-ng sentences (Japanese read from
kana: its Japanese voice says "Chinese letter" for each kanji), pocketsphinx-testdata's
LibriVox and card readings as real English, espeak German as a language not kept. Every
sentence's language and span are known, so each segment's language can be checked:

- segment language accuracy: segments (every one over reference speech, kept or not) whose
  language is the one most of the reference speech inside them is in; the baseline is the
  old rule, one language per file (the line's), on the same segments; goal >= 0.95;
- speech lost at a switch: the first and last sentence of each block (next to a switch) not
  covered, for at least half its length, by a kept segment (a sentence in a language not kept:
  by a segment flagged ``language``); goal 0;
- segments ending early: kept segments ending more than ``EARLY`` (0.3 s) before the last
  reference sentence in them does (its tail lost); goal 0;
- invented segments: kept segments over no reference speech; goal 0;
- hallucinations kept: kept segments whose text is a known hallucination
  (services/asr/hallucination.py: a stock phrase, a sound tag, a credit) that the reference
  sentences inside them do not say; goal 0; and, the other way, segments flagged
  ``hallucination`` whose reference says their text (speech lost to the flag); goal 0;
- text: each kept language's WER / CER over its own segments against its sentences.

``python -m bench --only wild`` (all the wild rows) or ``python -m bench.wild.language``.
"""

from __future__ import annotations

import os
import random
import tempfile
import time
from pathlib import Path

from fixtures.languages import EARLY, Score, Spliced, score, splice, truth_of
from fixtures.longform import SR, real_english
from fixtures.nonspeech import FetchError


def files(quick: bool) -> list[Spliced]:
    """The measured set: the issue's case (Japanese, 20 s of English, Japanese), its reverse,
    many short turns, real English with Japanese, a language not kept in the middle, and
    stock phrases said at switches with music between blocks."""
    out = [splice("ja-en-ja", [("ja", 60.0), ("en", 20.0), ("ja", 60.0)], 0),
           splice("en-ja-en", [("en", 60.0), ("ja", 20.0), ("en", 60.0)], 1),
           splice("turns", [("ja", 15.0), ("en", 10.0)] * 4, 2)]
    if real_english():
        out.append(splice("real-en-ja", [("en-real", 45.0), ("ja", 25.0), ("en-real", 45.0)], 3))
    out.append(splice("ja-de-ja", [("ja", 45.0), ("de", 20.0), ("ja", 45.0)], 4))
    try:  # a show's jingle and sign-offs at its switches: Whisper's stock phrases, said or not
        out.append(splice("phrases", [("ja", 20.0), ("phrase-en", 0.0), ("music", 8.0),
                                      ("en", 15.0), ("phrase-ja", 0.0), ("music", 8.0),
                                      ("ja", 15.0)], 5))
    except FetchError:
        pass
    return out[:2] if quick else out


def measure(quick: bool) -> tuple[Score, int, float]:
    """Runs the stage over :func:`files`; the score, the number of files and their minutes."""
    from services.asr.settings import AsrSettings
    from services.asr.stage import AsrStage

    fs = files(quick)
    out = Score()
    with tempfile.TemporaryDirectory(prefix="onsei-bench-lang-") as d:
        tmp = Path(d)
        stage = AsrStage(AsrSettings(
            asr_model=os.environ.get("ONSEI_ASR_MODEL", "bundled:whisper-base"),
            input_url=str(tmp / "raw"), output_url=str(tmp / "out"),
            scratch_dir=str(tmp / "scratch")))
        stage.load()
        for f in fs:
            t0 = time.perf_counter()
            got = stage.transcribe_file(f.name, f.audio)
            out.walls.append(time.perf_counter() - t0)
            out.switches += int(got.extra.get("language_switches", 0))
            score(got.line, f, stage.settings.asr_languages, out)
            if os.environ.get("ONSEI_BENCH_VERBOSE"):
                _show(got.line, f)
    return out, len(fs), sum(f.audio.size for f in fs) / SR / 60


def _show(line, f: Spliced) -> None:
    print(f"--- {f.name}: {line.status} {line.language}")
    for s in line.segments:
        print(f"  {s.start:7.2f}-{s.end:7.2f} {s.language} truth={truth_of(s.start, s.end, f)} "
              f"kept={s.kept} {s.reason or ''} {s.text[:60]!r}")


def language_per_segment(quick: bool) -> list[dict]:
    sc, n, minutes = measure(quick)
    where = f"{n} spliced files, {minutes:.1f} min"
    acc = sc.right / max(1, sc.segments)
    base = sc.right_file / max(1, sc.segments)
    rows = [
        {"name": f"wild language: segment language accuracy ({where}; baseline: one "
                 f"language per file)", "ours": round(acc, 4), "baseline": round(base, 4),
         "ratio": round(acc / base, 3) if base else None, "unit": "share of segments",
         "goal": ">= 0.95"},
        {"name": f"wild language: sentences lost at a switch (of {sc.edge_sentences} next "
                 "to one)", "ours": sc.lost_at_switch, "baseline": None, "ratio": None,
         "unit": "sentences", "goal": "0"},
        {"name": f"wild language: kept segments ending > {EARLY} s before their last sentence "
                 f"does (worst {sc.worst_end:+.2f} s)", "ours": sc.ends_early, "baseline": None,
         "ratio": None, "unit": f"segments of {sc.kept}", "goal": "0"},
        {"name": "wild language: invented segments (kept, over no reference speech)",
         "ours": sc.invented, "baseline": None, "ratio": None, "unit": "segments",
         "goal": "0"},
        {"name": "wild language: known hallucinations kept (a stock phrase, tag or credit its "
                 f"reference does not say; {sc.known_phrases} segments' text a known phrase)",
         "ours": sc.hallucinations_kept, "baseline": None, "ratio": None, "unit": "segments",
         "goal": "0"},
        {"name": "wild language: segments flagged hallucination that their reference says",
         "ours": sc.said_but_flagged, "baseline": None, "ratio": None, "unit": "segments",
         "goal": "0"},
        {"name": f"wild language: stage wall ({sc.switches} windows split at a switch)",
         "ours": round(sum(sc.walls), 2), "baseline": None, "ratio": None, "unit": "s wall",
         "goal": "report"},
    ]
    for lang, errs in sorted(sc.errors.items()):
        metric = "CER" if lang == "ja" else "WER"
        rows.append({"name": f"wild language: {lang} {metric} over its own segments",
                     "ours": round(sum(errs) / len(errs), 4), "baseline": None, "ratio": None,
                     "unit": metric, "goal": "report"})
    return rows


ROWS = [language_per_segment]

if __name__ == "__main__":
    random.seed(0)
    for row in language_per_segment(bool(os.environ.get("QUICK"))):
        print(row)
