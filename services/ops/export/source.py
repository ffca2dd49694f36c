"""One shard of a finished run -> its kept lines, staged locally, with what was removed.

From the tokens (``tokens/<tokenizer>/<shard>.jsonl``) or, with ``--no-tokens``, the enhanced
sidecars (``enhanced/<shard>.tar``, audio not decoded). Every line goes through the filter
policy and the duplicate list (services/rules/policy.py) again: tokenize applied the policy
in force then, and the dedup result may have grown since. Each line gets its corpus speaker
(``corpus_speaker_id``, ``corpus_speaker_confidence``) from the ``onsei speakers`` result where
it covers the shard (a label, once given, never changes: this fills in lines tokenized before
the shard was linked, and sidecars), else the tokens line's own.

A line's ``id`` and ``speaker_id`` are corpus ids (``services.records.corpus_id``,
``<name>@<shard>``): two shards may hold the same member keys. An id is refused when it repeats
in its shard or names another shard than the one it is read from, so no id is written twice in
the whole export (each shard's ids are distinct and carry that shard), with memory per shard
only. A staged line is two JSON values: the routing head ``[<file node>, <path set>,
<language>, <seconds>, <speaker>, <id>]`` then the export line itself (the speaker is the corpus
speaker, else the label within the file, else empty). Where the head ends is the JSON parser's
answer, never a separator's: no key, label or text can move a field or start a line of its own,
and the writer routes and caps lines without parsing the export line again.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from common.ledger.store import Ledger
from common.settings import Settings
from common.shards.members import iter_keys
from common.storage import NotFound, Store
from services.ops.export.line import ExportLine, leaf_paths
from services.ops.export.split import corpus_speaker_node, file_node, speaker_node
from services.ops.report.fairness import Fairness
from services.records import (
    AsrLine,
    RecordError,
    Sidecar,
    TokenLine,
    corpus_id,
    local_name,
    seconds_problem,
    segment_id,
    shard_of,
)
from services.rules.policy import FilterPolicy, reason_kind
from services.rules.skipped import skipped_of
from services.rules.stats import FilterOutcome
from services.speakers.result import Label
from services.stages import PIPELINE
from services.text.forms import TextForms

# what the card reports of each stage's done records: the model and its version
# Candidates per shard for the writer's schema witnesses: one of several files is on the train
# side unless all are in validation (and then the writer moves one's group to train); memory
# stays per shard and path set, not per file.
FIRST_PER_PATHSET = 4


@dataclass
class ShardRead:
    shard_id: int
    staged: Path
    error: str | None = None  # the shard was left out, and why
    lines: int = 0
    seconds: float = 0.0
    bad_lines: int = 0
    # lines that parsed and cannot be exported (a duration not a number of seconds, an id
    # seen earlier in the shard), and skipped entries whose seconds cannot be counted
    refused: Counter[str] = field(default_factory=Counter)
    removed: Counter[str] = field(default_factory=Counter)  # reason kind -> segments (export)
    removed_seconds: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    before: Counter[str] = field(default_factory=Counter)  # reason kind -> segments (tokenize)
    before_seconds: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    # stage -> reason kind -> segments a stage before tokenize dropped (enhance, before
    # restoration: services/enhance/early.py), and their seconds
    early: dict[str, Counter[str]] = field(default_factory=lambda: defaultdict(Counter))
    early_seconds: dict[str, dict[str, float]] = field(
        default_factory=lambda: defaultdict(lambda: defaultdict(float)))
    edges: set[tuple[str, str]] = field(default_factory=set)  # (file, voice) nodes
    pathsets: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # path set -> its first lines, up to FIRST_PER_PATHSET of distinct source files
    first: dict[str, dict[str, int]] = field(default_factory=dict)
    nodes: list[str] = field(default_factory=list)  # the source files with a kept line
    # stage -> JSON of its model, version and tokenizer
    models: dict[str, str] = field(default_factory=dict)
    policy: str = ""  # JSON of the tokenize done record's filter policy
    dedup_applied: bool = False
    spoken_by: Counter[str] = field(default_factory=Counter)  # text_spoken's writer -> lines
    fairness: Fairness = field(default_factory=Fairness)  # drops by length and speaker

    def remove(self, reasons: list[str], seconds: float) -> None:
        for kind in dict.fromkeys(reason_kind(r) for r in reasons):
            self.removed[kind] += 1
            self.removed_seconds[kind] += seconds


def _done_info(read: ShardRead, ledger: Ledger, stages: list[str]) -> None:
    for stage in stages:
        try:
            rec = ledger.read_done(stage, read.shard_id)
        except RecordError:  # a corrupt record: the card shows no model for this shard
            rec = None
        if rec is None:
            read.models[stage] = "{}"
            continue
        heads = {"model": rec.model, "version": rec.version,
                 "tokenizer": rec.model_info.get("tokenizer")}
        read.models[stage] = json.dumps({k: v for k, v in heads.items() if v is not None},
                                        sort_keys=True)
        stats, damage = FilterOutcome.read(rec)
        if stage == "tokenize":
            policy = stats.quality_filter.policy() if stats.quality_filter is not None else {}
            read.policy = json.dumps(policy, sort_keys=True)
        elif stats.quality_filter is None:
            continue  # no rule applied at this stage (enhance's early ones: when in force)
        skipped = skipped_of(stats, damage)
        for why in skipped.damaged:
            read.refused[f"{stage} skipped {why}"] += 1
        for entry in skipped.entries:  # the listed ones: the tally has no lengths
            read.fairness.add(float(entry.seconds), None, entry.reasons)
        counts, seconds = ((read.before, read.before_seconds) if stage == "tokenize"
                           else (read.early[stage], read.early_seconds[stage]))
        for kind, n in skipped.tally.segments_by_reason.items():
            counts[kind] += n
            seconds[kind] += skipped.tally.seconds_by_reason.get(kind, 0.0)


def _languages(store: Store, settings: Settings, shard_id: int) -> dict[str, str | None]:
    """Source key and segment id -> language, from the asr lines (lines written before tokens
    lines and sidecars carried the segment's own language; a segment's own wins over its
    file's: a file may switch languages)."""
    try:
        raw = store.read_bytes(PIPELINE.output_key("asr", settings, shard_id))
    except NotFound:
        return {}
    out: dict[str, str | None] = {}
    for line in raw.splitlines():
        try:
            row = AsrLine.from_json(line)
        except RecordError:
            continue
        out[row.key] = row.language
        out.update({segment_id(row.key, s.idx): s.language for s in row.kept if s.language})
    return out


def _token_lines(path: Path, read: ShardRead,
                 languages: dict[str, str | None]) -> Iterator[tuple[ExportLine, str]]:
    with open(path, "rb") as f:
        for raw in f:
            if not raw.strip():
                continue
            try:
                row = TokenLine.from_json(raw)
            except RecordError:
                read.bad_lines += 1
                continue
            local = local_name(row.id)
            source = local.rsplit("_", 1)[0]
            extra = {k: v for k, v in row.extra.items() if k not in ExportLine.model_fields}
            yield ExportLine(id=corpus_id(row.id, read.shard_id), text=row.text,
                             codes=row.codes, duration_seconds=row.duration_seconds,
                             language=row.language or languages.get(local,
                                                                    languages.get(source)),
                             speaker_id=_speaker(row.speaker_id, read.shard_id),
                             corpus_speaker_id=row.corpus_speaker_id,
                             corpus_speaker_confidence=row.corpus_speaker_confidence,
                             quality=row.quality, **TextForms.of(row).fields(),
                             **extra), source


def _sidecar_lines(path: Path, tar_key: str, read: ShardRead, max_member_bytes: int | None,
                   languages: dict[str, str | None]) -> Iterator[tuple[ExportLine, str]]:
    for item in iter_keys(path, max_member_bytes):
        if item.key is None or item.error is not None or "json" not in item.files:
            read.bad_lines += 1
            continue
        try:
            meta = Sidecar.from_json(item.data("json"))
        except RecordError:
            read.bad_lines += 1
            continue
        source = meta.source_key or item.key.rsplit("_", 1)[0]
        quality = meta.quality.filterable() if meta.quality is not None else None
        yield ExportLine(id=corpus_id(item.key, read.shard_id), text=meta.text,
                         duration_seconds=round(float(meta.duration_seconds or 0.0), 2),
                         language=meta.language or languages.get(local_name(item.key),
                                                                 languages.get(source)),
                         speaker_id=_speaker(meta.speaker_id, read.shard_id), quality=quality,
                         audio_tar=tar_key, audio_member=item.name,
                         **TextForms.of(meta).fields()), source


def _speaker(label: str | None, shard_id: int) -> str | None:
    """A speaker label (the voice within its source file) as the corpus names it."""
    return None if not label else corpus_id(label, shard_id)


def read_shard(shard_id: int, store: Store, ledger: Ledger, settings: Settings,
               policy: FilterPolicy, tokens: bool, workdir: Path,
               speakers: Mapping[str, Label] | None = None,
               decorate: Callable[[ExportLine], ExportLine] | None = None) -> ShardRead:
    """Stage the kept lines of one shard under ``workdir``; a shard whose source cannot be
    read is left out with its reason (``error``), never half staged. ``speakers``: the
    shard's corpus speaker labels by segment name (None: the result does not cover it);
    ``decorate``: adds fields to each line (its provenance: services/ops/provenance)."""
    read = ShardRead(shard_id, workdir / f"{shard_id}.staged")
    stage = "tokenize" if tokens else "enhance"
    key = PIPELINE.output_key(stage, settings, shard_id)
    local = workdir / f"{shard_id}.source"
    try:
        store.get_file(key, local)
    except NotFound:
        read.error = f"{key} missing (its {stage} done record exists)"
        return read
    _done_info(read, ledger, PIPELINE.chain(PIPELINE.names[0], stage))
    languages = _languages(store, settings, shard_id)
    rows = (_token_lines(local, read, languages) if tokens else
            _sidecar_lines(local, key, read, settings.max_member_bytes,
                           languages))
    first: dict[str, dict[str, int]] = defaultdict(dict)
    read.dedup_applied = policy.dedup is not None
    ids: set[str] = set()
    try:
        with open(read.staged, "w", encoding="utf-8", newline="\n") as out:
            for line, source in rows:
                seconds = float(line.duration_seconds)
                why = seconds_problem(seconds, settings.max_member_seconds)
                if why is None and shard_of(line.id) != shard_id:
                    why = "id names another shard"
                if why is None and line.id in ids:
                    why = "id repeats in the shard"
                if why is not None:
                    read.refused[why] += 1
                    continue
                ids.add(line.id)
                label = None if speakers is None else speakers.get(local_name(line.id))
                if label is not None:
                    line = line.model_copy(update={"corpus_speaker_id": label[0],
                                                   "corpus_speaker_confidence": label[1]})
                reasons = policy.reasons(line.quality, line.id)
                read.fairness.add(seconds, line.corpus_speaker_id or line.speaker_id, reasons)
                if reasons:
                    read.remove(reasons, seconds)
                    continue
                if decorate is not None:
                    line = decorate(line)
                node = file_node(shard_id, source)
                if line.speaker_id:
                    read.edges.add((node, speaker_node(line.speaker_id)))
                if line.corpus_speaker_id:
                    read.edges.add((node, corpus_speaker_node(line.corpus_speaker_id)))
                body = one_line(line.to_json())
                ps = _pathset(read, _shallow(line))
                if len(first[ps]) < FIRST_PER_PATHSET:
                    first[ps].setdefault(node, read.lines)
                if not read.nodes or read.nodes[-1] != node:
                    read.nodes.append(node)
                speaker = line.corpus_speaker_id or line.speaker_id or ""
                out.write(stage_line(Staged(node, ps, line.language or "unknown", seconds,
                                            speaker, line.id, body + "\n")))
                read.lines += 1
                read.seconds += seconds
                read.spoken_by[line.text_spoken_by or ""] += 1
    except Exception as e:  # noqa: BLE001 - a damaged source leaves its shard out, named
        read.error = f"{key} unreadable: {type(e).__name__}: {e}"[:300]
        read.staged.unlink(missing_ok=True)
    finally:
        local.unlink(missing_ok=True)
    read.first = dict(first)
    return read


@dataclass(frozen=True)
class Staged:
    node: str
    pathset: str
    language: str
    seconds: float
    speaker: str  # "" where the line has no speaker label
    id: str
    body: str  # the JSON line, its newline included


_HEAD = json.JSONDecoder()
# line breaks to str.splitlines and to JavaScript that JSON may leave raw inside a string
_BREAKS = {"\x85": "\\u0085", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def one_line(body: str) -> str:
    """A JSON line that every reader splits where JSON lines end: the line breaks JSON allows
    raw in a string written as escapes (the same string once parsed)."""
    for c, esc in _BREAKS.items():
        if c in body:
            body = body.replace(c, esc)
    return body


def stage_line(st: Staged) -> str:
    """``st`` as one staged line: its head as a JSON array, then its JSON line."""
    if "\n" in st.body[:-1] or not st.body.endswith("\n"):
        raise ValueError("a staged body is one JSON line")  # to_json never writes a newline
    head = json.dumps([st.node, st.pathset, st.language, st.seconds, st.speaker, st.id],
                      ensure_ascii=True)
    return head + st.body


def staged(raw: str) -> Staged:
    head, end = _HEAD.raw_decode(raw)
    node, ps, language, seconds, speaker, line_id = head
    return Staged(node, ps, language, float(seconds), speaker, line_id, raw[end:])


def _shallow(line: ExportLine) -> dict[str, Any]:
    """The line as JSON data (extra keys too) without walking its codes (thousands of ints)."""
    d = line.model_dump(mode="json", exclude={"codes"})
    if line.codes:
        d["codes"] = {k: v[:1] for k, v in line.codes.items()}
    return d


def _pathset(read: ShardRead, data: dict[str, Any]) -> str:
    paths = tuple(sorted(leaf_paths(data)))
    ps = hashlib.sha256(json.dumps(paths).encode()).hexdigest()[:16]
    read.pathsets.setdefault(ps, paths)
    return ps
