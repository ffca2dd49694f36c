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
- invented segments: kept segments over no reference speech; goal 0;
- text: each kept language's WER / CER over its own segments against its sentences.

``python -m bench --only wild`` (all the wild rows) or ``python -m bench.wild.language``.
"""

from __future__ import annotations

import os
import random
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from bench.longform import SR, LongForm, error_rate, make_longform, real_english, real_longform

Block = tuple[str, float]  # (language, seconds); "en-real": LibriVox / cards readings


@dataclass
class Spliced:
    name: str
    audio: np.ndarray
    sentences: list[tuple[float, float, str, str]] = field(default_factory=list)
    # (start, end, language, reference text), in spoken order
    edges: set[int] = field(default_factory=set)  # sentences next to a switch


def splice(name: str, blocks: list[Block], seed: int = 0) -> Spliced:
    """Blocks of one language each, in order, as one file."""
    out = Spliced(name, np.zeros(0, np.float32))
    parts: list[np.ndarray] = []
    t = 0.0
    for k, (lang, secs) in enumerate(blocks):
        if lang == "en-real":
            block: LongForm = real_longform(real_english(), secs, seed=seed + k)
        else:
            block = make_longform(lang, secs, 1, seed=seed * 10 + k)
        first = len(out.sentences)
        for (a, b), ref in zip(block.spans, block.sentences):
            out.sentences.append((t + a, t + b, block.language, ref))
        if k:
            out.edges.add(first)
        if k < len(blocks) - 1:
            out.edges.add(len(out.sentences) - 1)
        parts.append(block.audio)
        t += block.seconds
    out.audio = np.concatenate(parts).astype(np.float32)
    return out


def files(quick: bool) -> list[Spliced]:
    """The measured set: the issue's case (Japanese, 20 s of English, Japanese), its reverse,
    many short turns, real English with Japanese, and a language not kept in the middle."""
    out = [splice("ja-en-ja", [("ja", 60.0), ("en", 20.0), ("ja", 60.0)], 0),
           splice("en-ja-en", [("en", 60.0), ("ja", 20.0), ("en", 60.0)], 1),
           splice("turns", [("ja", 15.0), ("en", 10.0)] * 4, 2)]
    if real_english():
        out.append(splice("real-en-ja", [("en-real", 45.0), ("ja", 25.0), ("en-real", 45.0)], 3))
    out.append(splice("ja-de-ja", [("ja", 45.0), ("de", 20.0), ("ja", 45.0)], 4))
    return out[:2] if quick else out


def _truth(seg_start: float, seg_end: float, f: Spliced) -> str | None:
    """The language most of the reference speech inside a segment is in (None: none inside)."""
    share: dict[str, float] = {}
    for a, b, lang, _ in f.sentences:
        overlap = min(b, seg_end) - max(a, seg_start)
        if overlap > 0:
            share[lang] = share.get(lang, 0.0) + overlap
    return max(share, key=lambda k: share[k]) if share else None


@dataclass
class Score:
    segments: int = 0
    right: int = 0  # segment language is the truth
    right_file: int = 0  # the line's language is the truth (one language per file)
    edge_sentences: int = 0
    lost_at_switch: int = 0
    invented: int = 0
    errors: dict[str, list[float]] = field(default_factory=dict)  # language -> per file
    walls: list[float] = field(default_factory=list)
    switches: int = 0


def score(line, f: Spliced, kept_languages: list[str], out: Score) -> None:
    """Adds one file's line (services.records.AsrLine) to ``out``."""
    for s in line.segments:
        truth = _truth(s.start, s.end, f)
        if truth is None:
            out.invented += s.kept
            continue
        out.segments += 1
        out.right += (s.language or line.language) == truth
        out.right_file += line.language == truth
    for i in f.edges:
        a, b, lang, _ = f.sentences[i]
        out.edge_sentences += 1
        wanted = [s for s in line.segments if s.kept] if lang in kept_languages else \
            [s for s in line.segments if s.reason == "language"]
        covered = sum(max(0.0, min(b, s.end) - max(a, s.start)) for s in wanted)
        out.lost_at_switch += covered < 0.5 * (b - a)
    for lang in kept_languages:
        refs = [ref for _, _, x, ref in f.sentences if x == lang]
        if not refs:
            continue
        joiner = "" if lang == "ja" else " "
        hyp = joiner.join(s.text for s in line.kept if (s.language or line.language) == lang)
        out.errors.setdefault(lang, []).append(error_rate(lang, joiner.join(refs), hyp))


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
            score(got.line, f, stage.settings.languages, out)
            if os.environ.get("ONSEI_BENCH_VERBOSE"):
                _show(got.line, f)
    return out, len(fs), sum(f.audio.size for f in fs) / SR / 60


def _show(line, f: Spliced) -> None:
    print(f"--- {f.name}: {line.status} {line.language}")
    for s in line.segments:
        print(f"  {s.start:7.2f}-{s.end:7.2f} {s.language} truth={_truth(s.start, s.end, f)} "
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
        {"name": "wild language: invented segments (kept, over no reference speech)",
         "ours": sc.invented, "baseline": None, "ratio": None, "unit": "segments",
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
