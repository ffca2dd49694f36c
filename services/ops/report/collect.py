"""Gather what a run produced: the ledger (done + failure records) and the stage outputs.

Reads only through :func:`common.storage.open_store` and :class:`common.ledger.store.Ledger`, so the
same report works on a local output root and on ``s3://``. Reading is tolerant: a malformed
line or record is counted, never fatal (a report of a damaged run is the most useful one).
"""

from __future__ import annotations

import posixpath
import time
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any, TypeVar

from common.ledger.pack import Trimmed, trim
from common.ledger.records import DoneRecord
from common.ledger.store import stem_parser
from common.settings import Settings, section
from common.storage import NotFound, Store, open_store
from services.ops.corpus import StepProgress, progress
from services.ops.report.charts import largest_first
from services.ops.report.dedup import DedupData, collect_dedup
from services.ops.report.quality import QualityData
from services.ops.report.sidecars import read_sidecars
from services.ops.report.trainers import TrainerData
from services.records import (
    AsrLine,
    LineStatus,
    Record,
    RecordError,
    TokenLine,
    corpus_id,
)
from services.rules.skipped import read_skipped
from services.stages import PIPELINE, STAGES, open_ledger
from services.tokenize.settings import TokenizeSettings

TOP_N = 10
R = TypeVar("R", bound=Record)


@dataclass
class StageSummary:
    stage: str
    done: int = 0
    failed: int = 0  # failure records still standing (not superseded by a done record)
    dead_lettered: int = 0
    seconds_in: float = 0.0
    seconds_out: float = 0.0
    wall_seconds: float = 0.0
    wall_times: list[float] = field(default_factory=list)
    models: list[str] = field(default_factory=list)
    first_started: float | None = None  # min(finished_at - wall_seconds)
    last_finished: float | None = None

    @property
    def realtime_factor(self) -> float:
        """Audio seconds in per second of shard wall time (summed over shards)."""
        return self.seconds_in / self.wall_seconds if self.wall_seconds > 0 else 0.0

    @property
    def fleet_hours_per_hour(self) -> float:
        """Audio hours in per hour of calendar time from the first shard's start to the last end."""
        if self.first_started is None or self.last_finished is None:
            return 0.0
        span = self.last_finished - self.first_started
        return self.seconds_in / span if span > 0 else 0.0


@dataclass
class ReportData:
    output_url: str
    tokenizer: str
    generated_at: float
    stages: dict[str, StageSummary]
    files: int = 0
    files_ok: int = 0
    seconds_asr_in: float = 0.0
    seconds_kept: float = 0.0
    languages: Counter[str] = field(default_factory=Counter)  # files per detected language
    # audio seconds per language
    language_seconds: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    # kept segment seconds per segment language (a file may switch languages)
    segment_language_seconds: dict[str, float] = field(
        default_factory=lambda: defaultdict(float))
    segment_durations: list[float] = field(default_factory=list)  # kept segments
    drop_reasons: Counter[str] = field(default_factory=Counter)  # file-level dropped:<reason>
    error_reasons: Counter[str] = field(default_factory=Counter)  # file-level error:<reason>
    segment_reasons: Counter[str] = field(default_factory=Counter)  # why segments were not kept
    token_lines: int = 0
    token_seconds: float = 0.0
    unreadable: list[str] = field(default_factory=list)  # outputs that could not be parsed
    slowest: list[dict[str, Any]] = field(default_factory=list)
    failed: list[dict[str, Any]] = field(default_factory=list)
    cost: dict[str, Any] = field(default_factory=dict)  # services.ops.costs.summary
    quality: QualityData = field(default_factory=QualityData)
    dedup: DedupData = field(default_factory=DedupData)
    # each corpus step the pipeline declares: how far it covers the shards it reads
    corpus: list[StepProgress] = field(default_factory=list)

    trainers: TrainerData = field(default_factory=TrainerData)


def _jsonl(store: Store, key: str, record: type[R]) -> tuple[list[R], int]:
    """Parsed lines of one JSONL object, and the number of lines that are not a ``record``."""
    try:
        raw = store.read_bytes(key)
    except NotFound:
        return [], 1
    rows, bad = [], 0
    for line in raw.splitlines():
        if not line.strip():
            continue
        try:
            rows.append(record.from_json(line))
        except RecordError:
            bad += 1
    return rows, bad


def _add_asr_rows(data: ReportData, rows: list[AsrLine]) -> None:
    for row in rows:
        data.files += 1
        dur = float(row.duration or 0.0)
        data.seconds_asr_in += dur
        kind, reason = row.outcome
        lang = row.language or "unknown"
        if kind is not LineStatus.ERROR:
            data.languages[lang] += 1
            data.language_seconds[lang] += dur
        if kind is LineStatus.OK:
            data.files_ok += 1
        elif kind is LineStatus.DROPPED:
            data.drop_reasons[reason] += 1
        else:
            data.error_reasons[reason] += 1
        for seg in row.segments:
            length = max(0.0, float(seg.end) - float(seg.start))
            if seg.kept:
                data.segment_durations.append(length)
                data.seconds_kept += length
                data.segment_language_seconds[seg.language or lang] += length
            else:
                data.segment_reasons[seg.reason or "unspecified"] += 1


def _add_done(summary: StageSummary, rec: DoneRecord) -> None:
    summary.done += 1
    summary.seconds_in += rec.audio_seconds_in
    summary.seconds_out += rec.audio_seconds_out
    wall = rec.wall_seconds
    summary.wall_seconds += wall
    summary.wall_times.append(wall)
    if rec.model and rec.model not in summary.models:
        summary.models.append(rec.model)
    fin = rec.finished_at
    if fin:
        start = fin - wall
        summary.first_started = start if summary.first_started is None else min(
            summary.first_started, start)
        summary.last_finished = fin if summary.last_finished is None else max(
            summary.last_finished, fin)


def _outputs(store: Store, stage: str, settings: Settings) -> list[str]:
    """Every shard's output of ``stage``, listed where its spec puts them (``tokens/<codec>/``)."""
    sample = PIPELINE.output_key(stage, settings, 0)
    folder = sample.rpartition("/")[0]
    suffix = posixpath.splitext(sample)[1]
    return [k for k in store.list(f"{folder}/" if folder else "") if k.endswith(suffix)]


def collect(output_url: str, settings: Settings, workers: int = 8,
            total_shards: int | None = None) -> ReportData:
    """``total_shards``: the run's size, for the projection of hours and cost to finish."""
    from services.ops.costs import summary

    store = open_store(output_url, settings)
    ledger = open_ledger(settings, store)
    codec = section(settings, TokenizeSettings).tokenize_codec
    data = ReportData(output_url=output_url, tokenizer=codec,
                      generated_at=time.time(), stages={s: StageSummary(s) for s in STAGES})
    slow: list[dict[str, Any]] = []
    records: dict[str, list[Trimmed]] = {}
    done_by_stage: dict[str, set[int]] = {}
    for stage in STAGES:
        stage_sum = data.stages[stage]
        done_ids = done_by_stage[stage] = set()
        done = ledger.done_records(stage)
        failures = ledger.failures(stage)
        for key, why in {**done.corrupt, **failures.corrupt}.items():
            data.unreadable.append(f"{key}: corrupt record, not counted ({why})")
        records[stage] = [trim(rec) for rec in done]
        for rec in done:
            _add_done(stage_sum, rec)
            if stage in ("enhance", "tokenize"):  # what the filter rules removed there
                data.quality.add_skipped(read_skipped(rec))
            done_ids.add(rec.shard_id)
            slow.append({"stage": stage, "shard": rec.shard or "?",
                         "wall_seconds": rec.wall_seconds,
                         "audio_seconds_in": rec.audio_seconds_in, "host": rec.host})
        for fail in failures:
            if fail.shard_id is None or fail.shard_id in done_ids:
                continue  # a later success wins; a malformed message names no shard
            stage_sum.failed += 1
            stage_sum.dead_lettered += fail.dead_lettered
            data.failed.append({"stage": stage, "shard": fail.shard or "?",
                                "reason": fail.reason[:300], "attempts": fail.attempts,
                                "dead_lettered": fail.dead_lettered})
    data.cost = summary(records, settings, total_shards, data.generated_at)
    data.dedup = collect_dedup(store)
    data.corpus = [progress(c, store, done_by_stage[c.after]) for c in PIPELINE.corpus_steps]
    data.slowest = sorted(slow, key=lambda r: r["wall_seconds"], reverse=True)[:TOP_N]
    data.failed.sort(key=lambda r: (r["stage"], str(r["shard"])))

    asr_keys = _outputs(store, "asr", settings)
    tok_keys = _outputs(store, "tokenize", settings)
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        asr_rows = pool.map(lambda k: _jsonl(store, k, AsrLine), asr_keys)
        for key, (rows, bad) in zip(asr_keys, asr_rows):
            _add_asr_rows(data, rows)
            if bad:
                data.unreadable.append(f"{key}: {bad} bad line(s)")
        tok_rows = pool.map(lambda k: _jsonl(store, k, TokenLine), tok_keys)
        shard_of_stem = stem_parser(settings)
        for key, (tokens, bad) in zip(tok_keys, tok_rows):
            # a speaker label names a voice within its shard
            shard = shard_of_stem(posixpath.splitext(posixpath.basename(key))[0])
            data.token_lines += len(tokens)
            data.token_seconds += sum(float(r.duration_seconds) for r in tokens)
            for r in tokens:
                data.quality.add_line(r, _speaker(r.speaker_id, shard))
                data.trainers.add_line(r, shard)
            if bad:
                data.unreadable.append(f"{key}: {bad} bad line(s)")
        _add_sidecars(data, store, settings, pool, shard_of_stem,
                      {shard_of_stem(posixpath.splitext(posixpath.basename(k))[0])
                       for k in tok_keys})
    return data


def _speaker(label: str | None, shard: int | None) -> str | None:
    return None if not label else label if shard is None else corpus_id(label, shard)


def _add_sidecars(data: ReportData, store: Store, settings: Settings, pool: ThreadPoolExecutor,
                  shard_of_stem: Any, tokenized: set[int | None]) -> None:
    """The annotations of every enhanced shard without tokens, from its sidecars (tokenize
    not run yet, or stopped: the README's quick start has no codec weights)."""
    keys = [k for k in _outputs(store, "enhance", settings)
            if shard_of_stem(posixpath.splitext(posixpath.basename(k))[0]) not in tokenized]
    reads = pool.map(lambda k: read_sidecars(store, k, settings.max_member_bytes,
                                             settings.scratch_dir), keys)
    for key, (metas, bad) in zip(keys, reads):
        shard = shard_of_stem(posixpath.splitext(posixpath.basename(key))[0])
        for _seg, meta in metas:
            data.quality.add_sidecar(meta, _speaker(meta.speaker_id, shard))
            data.trainers.add_line(meta, shard)
        if bad:
            data.unreadable.append(f"{key}: {bad} bad member(s)")


LENGTH_BINS = (0, 5, 10, 15, 20, 25, 30)  # seconds: TTS recipes train on 3-20 s, Whisper's max 30


def segment_lengths(durations: list[float]) -> dict[str, Any]:
    """The kept segments' length distribution: median, 90th percentile and counts per 5 s."""
    if not durations:
        return {"median": None, "p90": None, "bins": {}}
    d = sorted(durations)
    edges = [*LENGTH_BINS, float("inf")]
    bins = {f"{a}-{b}" if b != float("inf") else f"{a}+": sum(a <= x < b for x in d)
            for a, b in pairwise(edges)}
    return {"median": d[len(d) // 2], "p90": d[min(len(d) - 1, int(0.9 * len(d)))],
            "bins": bins}


def to_json(data: ReportData) -> dict[str, Any]:
    """A plain summary (what ``onsei report --json`` prints)."""
    return {
        "output_url": data.output_url,
        "tokenizer": data.tokenizer,
        "files": data.files,
        "files_ok": data.files_ok,
        "hours": {
            "asr_in": data.seconds_asr_in / 3600,
            "kept": data.seconds_kept / 3600,
            **{f"{s}_out": st.seconds_out / 3600 for s, st in data.stages.items()},
            "tokens": data.token_seconds / 3600,
        },
        "stages": {
            s: {"done": st.done, "failed": st.failed, "dead_lettered": st.dead_lettered,
                "hours_in": st.seconds_in / 3600, "hours_out": st.seconds_out / 3600,
                "realtime_factor": st.realtime_factor, "models": st.models}
            for s, st in data.stages.items()
        },
        "languages": dict(data.languages.most_common()),
        "segment_language_hours": {k: v / 3600 for k, v
                                   in largest_first(data.segment_language_seconds)},
        "segments_kept": len(data.segment_durations),
        "segment_seconds": segment_lengths(data.segment_durations),
        "token_lines": data.token_lines,
        "drop_reasons": dict(data.drop_reasons.most_common()),
        "error_reasons": dict(data.error_reasons.most_common()),
        "segment_reasons": dict(data.segment_reasons.most_common()),
        "slowest": data.slowest,
        "failed": data.failed,
        "unreadable": data.unreadable,
        "cost": data.cost,
        "quality": data.quality.as_dict(),
        "dedup": data.dedup.as_dict(),
        "corpus": {c.name: c.as_dict() for c in data.corpus},

        "trainers": data.trainers.as_dict(),
    }
