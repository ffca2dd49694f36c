"""The dataset card (README.md) of an export: what is in it, how to load each thing it ships,
what was removed and why, and what produced it. Its YAML header names the JSON lines of each
split, so ``load_dataset(DIR)`` (the Hub way) reads them and nothing else (a json builder given
the whole directory would read ``--with-audio``'s tars as JSON; a second configuration for the
tars would be read with the json builder too: ``datasets`` picks one builder per directory).
The card's "Loading" recipe is run by the tests as written."""

from __future__ import annotations

import json
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

from services.ops.export import markdown as md
from services.ops.export.audio import AUDIO_DIR
from services.ops.export.source import ShardRead
from services.ops.export.speakers import speaker_section
from services.ops.export.split import SPLITS, TEST, TRAIN
from services.ops.export.write import SplitPlan, Written, group_warning
from services.ops.report.fairness import card_section as fairness_section


@dataclass
class CardInfo:
    source: str  # the output root exported (redacted)
    tokens: bool
    plan: SplitPlan
    policy: dict[str, Any]
    dedup: dict[str, Any] | None  # the dedup result's summary fields used, None: never ran
    reads: list[ShardRead]
    written: Written
    audio: list[str] = field(default_factory=list)  # --with-audio: the tars, relative
    created_at: float = field(default_factory=time.time)


def _removed(reads: list[ShardRead]) -> list[list[str]]:
    n: Counter[tuple[str, str]] = Counter()
    sec: dict[tuple[str, str], float] = defaultdict(float)
    for r in reads:
        for where, counts, seconds in (*((st, r.early[st], r.early_seconds[st])
                                         for st in sorted(r.early)),
                                       ("tokenize", r.before, r.before_seconds),
                                       ("export", r.removed, r.removed_seconds)):
            for k, v in counts.items():
                n[(where, k)] += v
                sec[(where, k)] += seconds[k]
    return [[md.code(k, True), where, str(n[(where, k)]), md.hours(sec[(where, k)])]
            for where, k in sorted(n, key=lambda wk: (-sec[wk], wk))]


def _models(reads: list[ShardRead]) -> list[list[str]]:
    seen: Counter[tuple[str, str]] = Counter()
    for r in reads:
        for stage, info in r.models.items():
            seen[(stage, info)] += 1
    return [[md.text(stage), md.code(info, True), str(n)]
            for (stage, info), n in sorted(seen.items())]


def _refused(reads: list[ShardRead]) -> str:
    """The lines (and skipped entries) refused, by reason: never counted in an hour."""
    n: Counter[str] = Counter()
    for r in reads:
        n.update(r.refused)
    if not n:
        return ""
    return (f"; lines refused: {sum(n.values())} ("
            + ", ".join(f"{md.text(k)}: {v}" for k, v in sorted(n.items())) + ")")


def _spoken(reads: list[ShardRead]) -> list[str]:
    """Which normaliser wrote the lines' ``text_spoken`` (name and version), and how many."""
    by: Counter[str] = Counter()
    for r in reads:
        by.update(r.spoken_by)
    about = ("`text` is Whisper's transcript as written; `text_spoken` the same words as said "
             "(numbers, dates, times, money, units and abbreviations written out in the line's "
             "language), by the normaliser its `text_spoken_by` names. Japanese lines add "
             "`reading` (katakana) and `accent` (accent phrases: `/` between them, `'` after "
             "the mora where the pitch falls); `phonemes` (IPA) where asr was asked for them "
             "(docs/text.md).")
    none = "none (no normaliser for the language, or written before text_spoken)"
    return ["## Text", "", about, "",
            *md.table(["text_spoken written by", "lines"],
                    [[md.text(k) if k else none, str(n)] for k, n in by.most_common()]), ""]


def _share(seconds: float, total: float) -> str:
    return f"{100 * seconds / total:.1f} %" if total else "-"


def _largest(w: Written, plan: SplitPlan, total: float) -> list[str]:
    """The group with the most hours: files sharing voices chain into one group, and a group
    is in one split whole, so a group near the size of a split makes its share drift from the
    fraction asked."""
    big = w.largest_group()
    if big is None:
        return []
    _, seconds, split = big
    warning = group_warning(w, plan)
    return ["", f"{sum(w.groups.values())} groups; the largest holds {md.hours(seconds)} hours "
            f"({_share(seconds, total)} of the export), in {split}."
            + (f" **Warning**: {md.text(warning)}." if warning else "")]


def _loading(splits: list[str], tars: list[str]) -> list[str]:
    """How to load each thing the export ships, as code that runs as written (the tests run
    it) once ``root`` names the export."""
    data_files = ", ".join(f'"{s}": f"{{root}}/{s}/*.jsonl"' for s in splits)
    code = ["```python", "from datasets import load_dataset", "",
            'root = "."  # the export\'s directory',
            "# the JSON lines, per split, as this card's header names them",
            "lines = load_dataset(root)",
            "# the same files, named explicitly (a copy without this card)",
            f'lines = load_dataset("json", data_files={{{data_files}}})']
    about = ["## Loading", "",
             "The JSON lines (" + ", ".join(f"`{s}/`" for s in splits) + ") load with "
             "`datasets` as below (uploaded to the Hub, `load_dataset(\"<user>/<name>\")` reads "
             "the same files, named in this card's header); never give the json builder the "
             "whole directory (`data_dir=`)" + (": it would read the tars as JSON" if tars
                                                else "") + "."]
    if tars:
        # train named last: the webdataset builder infers the JSON's fields from the first
        # samples of the last split named, and train's first samples are the export's schema
        # witnesses (write.py), which hold every field
        order = [*(t for t in tars if t != TRAIN), *(t for t in tars if t == TRAIN)]
        tar_files = ", ".join(f'"{s}": f"{{root}}/{AUDIO_DIR}/{s}/*.tar"' for s in order)
        code += ["# the audio: the enhanced FLAC and the same line as JSON per segment (train",
                 "# last: its first samples hold every field, and datasets infers them there)",
                 f'audio = load_dataset("webdataset", data_files={{{tar_files}}})']
        about += ["", (f"`{AUDIO_DIR}/<split>/shard-NNNNN.tar` (`--with-audio`): WebDataset "
                  "tars, each sample the segment's FLAC (`flac`, 24 kHz mono) and its line "
                  "(`json`, the same fields, `id` included); the sample key is its position in "
                  "the split. `load_dataset(\"webdataset\", ...)` decodes the FLAC (datasets 4+: "
                  "with `torchcodec`); `webdataset.WebDataset(paths)` reads them as plain "
                  "samples.")]
    return [*about, "", *code, "```", ""]


def render(info: CardInfo) -> str:
    w, reads = info.written, info.reads
    ok = [r for r in reads if r.error is None]
    left_out = [r for r in reads if r.error is not None]
    dups = sum(r.before["duplicate_of"] + r.removed["duplicate_of"] for r in ok)
    dup_s = sum(r.before_seconds["duplicate_of"] + r.removed_seconds["duplicate_of"] for r in ok)
    files = {s: w.files[s] for s in SPLITS if w.files[s]}
    splits = [s for s in SPLITS if s != TEST or info.plan.test_fraction or w.lines[s]]
    plan = info.plan
    header = ["---", "configs:", "- config_name: default", "  data_files:"]
    for s in files:
        header += [f"  - split: {s}", f"    path: {s}/*.jsonl"]
    tars = [s for s in SPLITS if any(a.startswith(f"{AUDIO_DIR}/{s}/") for a in info.audio)]
    header.append("---")
    languages = sorted({lang for s in w.languages for lang in w.languages[s]},
                       key=lambda lang: -sum(w.languages[s][lang] for s in w.languages))
    ids = [r.shard_id for r in ok]
    total = sum(w.seconds.values())
    body = [
        "# onsei export", "",
        f"Speech from {md.code(info.source)}, restored and "
        + ("tokenized (NeuCodec, 50 codes per second)" if info.tokens else
           "not tokenized (`--no-tokens`: each line names its FLAC in the enhanced tar)")
        + f"; exported {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(info.created_at))}.",
        "", "One line per segment: "
        "`id`, `text`, " + ("`codes.neu_tokens`, " if info.tokens else "`audio_tar`, "
                            "`audio_member`, ")
        + "`duration_seconds`, `language`, `speaker_id` (where labelled), `corpus_speaker_id` "
        "and `corpus_speaker_confidence` (where `onsei speakers` linked it), `quality` "
        "(docs/quality.md), `text_spoken` and its forms (below)."
        + ("" if info.tokens else " `audio_tar` is the enhanced tar holding the segment's "
           "FLAC, relative to the run's output root (Source, above); `audio_member` its member "
           "there."), "", *_loading(list(files), tars), "## Splits", "",
        *md.table(["split", "lines", "hours", "share of hours", "groups", "speakers",
                   "part files"],
                [[s, str(w.lines[s]), md.hours(w.seconds[s]), _share(w.seconds[s], total),
                  str(w.groups[s]), str(len(w.speakers[s] - {""})), str(len(w.files[s]))]
                 for s in splits]),
        "", (f"Split by the hash of each group (seed {plan.seed}, validation fraction "
             f"{plan.validation_fraction:g}"
             + (f", test fraction {plan.test_fraction:g}" if plan.test_fraction else "")
             + "); a group is every source file, speaker label within a file and corpus "
             "speaker (`onsei speakers`) that share a line, so none is ever in two splits."),
        *_largest(w, plan, total), "",
        "## Hours per language", "",
        *md.table(["language", *splits],
                [[md.text(lang), *(md.hours(w.languages[s][lang]) for s in splits)]
                 for lang in languages]),
        "", *speaker_section(w, plan.caps),
        "", *_spoken(ok), "## Removed", "",
        f"Duplicates removed: {dups} segments, {md.hours(dup_s)} hours"
        + ("" if info.dedup is not None else " (`onsei dedup` has not run on this output root)")
        + ".", "",
        *md.table(["reason", "removed by", "segments", "hours"], _removed(ok)),
        "", *fairness_section([r.fairness for r in ok]), "## Source", "",
        f"Shards exported: {len(ok)}" + (f" ({min(ids)}-{max(ids)})" if ids else "")
        + f"; lines unreadable in the source: {sum(r.bad_lines for r in ok)}"
        + _refused(ok) + ".",
    ]
    if info.dedup is not None:
        not_covered = sum(1 for r in ok if not r.dedup_applied)
        body += ["", (f"Dedup result {md.code(str(info.dedup['duplicates_sha256'])[:16])}: "
                      f"{info.dedup['clusters']} clusters over {len(info.dedup['shards'])} "
                      f"shards; {not_covered} exported shards not yet matched by it.")]
    if left_out:
        body += ["", "Shards left out:", ""] + [f"- {r.shard_id}: {md.text(r.error or '')}"
                                                for r in left_out]
    if w.moved_to_train:
        body += ["", (f"{len(w.moved_to_train)} group(s) moved to train: they held a field no "
                      "train line had, and a loader infers the schema from train's first lines.")]
    body += ["", "## Settings and models", "",
             "Filter policy applied at export: " + md.code(json.dumps(info.policy, sort_keys=True)),
             "", *md.table(["stage", "model (from the done records)", "shards"], _models(ok)), ""]
    policies = Counter(r.policy for r in ok if r.policy)
    if policies:
        body += ["Tokenize's filter policy (shards): "
                 + "; ".join(f"{md.code(p)} ({n})" for p, n in sorted(policies.items())), ""]
    return "\n".join(header + body)
