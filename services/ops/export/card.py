"""The dataset card (README.md) of an export: what is in it, what was removed and why, and
what produced it. Its YAML header names the splits' files, so ``load_dataset(DIR)`` (the Hub
way) finds them as ``load_dataset("json", data_dir=DIR)`` does."""

from __future__ import annotations

import json
import re
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

from services.ops.export.source import ShardRead
from services.ops.export.split import TRAIN, VALIDATION
from services.ops.export.write import Written


@dataclass
class CardInfo:
    source: str  # the output root exported (redacted)
    tokens: bool
    seed: int
    validation_fraction: float
    policy: dict[str, Any]
    dedup: dict[str, Any] | None  # the dedup result's summary fields used, None: never ran
    reads: list[ShardRead]
    written: Written
    created_at: float = field(default_factory=time.time)


def _h(seconds: float) -> str:
    return f"{seconds / 3600:.3f}"


# Text from the data (the output URL, languages, reasons, errors, the done records' models)
# goes into the card as Markdown that shows it as it is: a backtick or a `<` in it must neither
# end a code span nor open raw HTML, and a line break or `|` must not end a table row.
_CONTROL = re.compile(r"[\x00-\x1f\x7f\u2028\u2029]")
_SPECIAL = re.compile(r"[\\`*_\[\]<>&|~]")


def _plain(text: str) -> str:
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", str(text))


def _text(text: str) -> str:
    """Text shown as is: every character Markdown could read as markup backslash-escaped."""
    return _SPECIAL.sub(lambda m: "\\" + m.group(), _plain(text))


def _code(text: str, in_table: bool = False) -> str:
    """A code span holding ``text`` whatever it holds: fenced by more backticks than its
    longest run, padded when it starts or ends with a backtick or a space; in a table a `|`
    is escaped (GFM splits cells before it reads code spans)."""
    body = _plain(text)
    if in_table:
        body = body.replace("|", "\\|")
    fence = "`" * (max((len(r) for r in re.findall("`+", body)), default=0) + 1)
    if body[:1] in ("`", " ") or body[-1:] in ("`", " "):
        body = f" {body} "
    return f"{fence}{body}{fence}"


def _table(headers: list[str], rows: list[list[str]]) -> list[str]:
    out = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return out if rows else ["(none)"]


def _removed(reads: list[ShardRead]) -> list[list[str]]:
    n: Counter[tuple[str, str]] = Counter()
    sec: dict[tuple[str, str], float] = defaultdict(float)
    for r in reads:
        for where, counts, seconds in (("tokenize", r.before, r.before_seconds),
                                       ("export", r.removed, r.removed_seconds)):
            for k, v in counts.items():
                n[(where, k)] += v
                sec[(where, k)] += seconds[k]
    return [[_code(k, True), where, str(n[(where, k)]), _h(sec[(where, k)])]
            for where, k in sorted(n, key=lambda wk: (-sec[wk], wk))]


def _models(reads: list[ShardRead]) -> list[list[str]]:
    seen: Counter[tuple[str, str]] = Counter()
    for r in reads:
        for stage, info in r.models.items():
            seen[(stage, info)] += 1
    return [[_text(stage), _code(info, True), str(n)] for (stage, info), n in sorted(seen.items())]


def _refused(reads: list[ShardRead]) -> str:
    """The lines (and skipped entries) refused, by reason: never counted in an hour."""
    n: Counter[str] = Counter()
    for r in reads:
        n.update(r.refused)
    if not n:
        return ""
    return (f"; lines refused: {sum(n.values())} ("
            + ", ".join(f"{_text(k)}: {v}" for k, v in sorted(n.items())) + ")")


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
            *_table(["text_spoken written by", "lines"],
                    [[_text(k) if k else none, str(n)] for k, n in by.most_common()]), ""]


def render(info: CardInfo) -> str:
    w, reads = info.written, info.reads
    ok = [r for r in reads if r.error is None]
    left_out = [r for r in reads if r.error is not None]
    dups = sum(r.before["duplicate_of"] + r.removed["duplicate_of"] for r in ok)
    dup_s = sum(r.before_seconds["duplicate_of"] + r.removed_seconds["duplicate_of"] for r in ok)
    files = {s: w.files[s] for s in (TRAIN, VALIDATION) if w.files[s]}
    header = ["---", "configs:", "- config_name: default", "  data_files:"]
    for s in files:
        header += [f"  - split: {s}", f"    path: {s}/*.jsonl"]
    header.append("---")
    languages = sorted({lang for s in w.languages for lang in w.languages[s]},
                       key=lambda lang: -sum(w.languages[s][lang] for s in w.languages))
    ids = [r.shard_id for r in ok]
    body = [
        "# onsei export", "",
        f"Speech from {_code(info.source)}, restored and "
        + ("tokenized (NeuCodec, 50 codes per second)" if info.tokens else
           "not tokenized (`--no-tokens`: each line names its FLAC in the enhanced tar)")
        + f"; exported {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(info.created_at))}.",
        "", "Load it with `datasets.load_dataset(\"json\", data_dir=...)`. One line per segment: "
        "`id`, `text`, " + ("`codes.neu_tokens`, " if info.tokens else "`audio_tar`, "
                            "`audio_member`, ")
        + "`duration_seconds`, `language`, `speaker_id` (where labelled), `quality` "
        "(docs/quality.md), `text_spoken` and its forms (below).", "", "## Splits", "",
        *_table(["split", "lines", "hours", "groups", "files"],
                [[s, str(w.lines[s]), _h(w.seconds[s]), str(w.groups[s]), str(len(w.files[s]))]
                 for s in (TRAIN, VALIDATION)]),
        "", (f"Split by the hash of each group (seed {info.seed}, validation fraction "
             f"{info.validation_fraction:g}); a group is every source file and speaker label "
             "that share a line, so neither is ever on both sides."), "",
        "## Hours per language", "",
        *_table(["language", *(s for s in (TRAIN, VALIDATION))],
                [[_text(lang), *(_h(w.languages[s][lang]) for s in (TRAIN, VALIDATION))]
                 for lang in languages]),
        "", *_spoken(ok), "## Removed", "",
        f"Duplicates removed: {dups} segments, {_h(dup_s)} hours"
        + ("" if info.dedup is not None else " (`onsei dedup` has not run on this output root)")
        + ".", "",
        *_table(["reason", "removed by", "segments", "hours"], _removed(ok)),
        "", "## Source", "",
        f"Shards exported: {len(ok)}" + (f" ({min(ids)}-{max(ids)})" if ids else "")
        + f"; lines unreadable in the source: {sum(r.bad_lines for r in ok)}"
        + _refused(ok) + ".",
    ]
    if info.dedup is not None:
        not_covered = sum(1 for r in ok if not r.dedup_applied)
        body += ["", (f"Dedup result {_code(str(info.dedup['duplicates_sha256'])[:16])}: "
                      f"{info.dedup['clusters']} clusters over {len(info.dedup['shards'])} "
                      f"shards; {not_covered} exported shards not yet matched by it.")]
    if left_out:
        body += ["", "Shards left out:", ""] + [f"- {r.shard_id}: {_text(r.error or '')}"
                                                for r in left_out]
    if w.moved_to_train:
        body += ["", (f"{len(w.moved_to_train)} group(s) moved to train: they held a field no "
                      "train line had, and a loader infers the schema from train's first lines.")]
    body += ["", "## Settings and models", "",
             "Filter policy applied at export: " + _code(json.dumps(info.policy, sort_keys=True)),
             "", *_table(["stage", "model (from the done records)", "shards"], _models(ok)), ""]
    policies = Counter(r.policy for r in ok if r.policy)
    if policies:
        body += ["Tokenize's filter policy (shards): "
                 + "; ".join(f"{_code(p)} ({n})" for p, n in sorted(policies.items())), ""]
    return "\n".join(header + body)
