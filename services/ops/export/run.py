"""One export: which shards, read them (threads: a remote store's GETs are latency-bound),
split, write, card, publish. Settings arrive as an argument; nothing here reads the
environment."""

from __future__ import annotations

import shutil
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from common.redact import redact_text
from common.settings import Settings
from common.storage import open_store
from common.storage.location import absolute_url
from services.dedup.result import SUMMARY_KEY, DedupResult
from services.ops.export.audio import SHARD_SEGMENTS, AudioMissing, write_audio
from services.ops.export.card import CardInfo, render
from services.ops.export.publish import (
    CARD,
    check_local_target,
    check_store_target,
    check_target_place,
    local_path,
    new_marker,
    publish_local,
    publish_store,
    recover,
    seal,
    staging,
)
from services.ops.export.source import ShardRead, read_shard
from services.ops.export.write import PART_BYTES, SplitPlan, Written, write_parts
from services.ops.provenance.card import section as provenance_section
from services.ops.provenance.screen import Screen, ScreenError, ScreenOptions
from services.records import RecordError
from services.rules.policy import FilterPolicy
from services.speakers.result import SUMMARY_KEY as SPEAKERS_SUMMARY
from services.speakers.result import SpeakersReader
from services.stages import open_ledger


class ExportError(ValueError):
    """The export cannot be made as asked (one line, nothing written to ``--to``)."""


@dataclass
class ExportResult:
    to: str
    reads: list[ShardRead]
    written: Written
    recovered: list[str]  # what a killed export had left beside --to, and what became of it
    kept: list[str] = field(default_factory=list)  # in --to, not the earlier export's: kept
    screen: Screen | None = None  # what the provenance screen decided (services/ops/provenance)


def export(settings: Settings, output_url: str, to: str, ids: range | None = None,
           tokens: bool = True, plan: SplitPlan | None = None, workers: int = 8,
           part_bytes: int = PART_BYTES, with_audio: bool = False,
           shard_segments: int = SHARD_SEGMENTS,
           screening: ScreenOptions | None = None) -> ExportResult:
    plan = plan or SplitPlan()
    why = plan.problem()
    if why is not None:
        raise ExportError(why)
    if with_audio and shard_segments < 1:
        raise ExportError(f"--shard-size {shard_segments}: at least 1 segment a tar")
    check_target_place(to, output_url)
    dest = local_path(to)
    recovered = recover(dest) if dest is not None else []
    if dest is not None:
        check_local_target(dest)
    else:
        check_store_target(open_store(to, settings), to)
    store = open_store(absolute_url(output_url), settings)
    ledger = open_ledger(settings, store)
    stage = "tokenize" if tokens else "enhance"
    shards = sorted(ledger.done_ids(stage, ids) if ids is None else
                    (i for i in ledger.done_ids(stage, ids) if i in ids))
    if not shards:
        raise ExportError(f"no shard of {redact_text(output_url)} has a {stage} done record"
                          + ("" if ids is None else f" in {ids.start}-{ids.stop - 1}")
                          + ("; --no-tokens exports the enhanced shards" if tokens else ""))
    try:
        dedup = DedupResult.load(store)
    except RecordError as e:
        raise ExportError(f"dedup result {store.child_url(SUMMARY_KEY)} unusable: {e}") from None
    speakers = SpeakersReader(store, settings)
    try:
        speakers.refresh()
        labels = {i: speakers.labels(i) for i in shards}  # ~60 bytes a segment: per run, small
    except RecordError as e:
        raise ExportError(f"speakers result {store.child_url(SPEAKERS_SUMMARY)} unusable: "
                          f"{e}") from None
    policy = FilterPolicy.from_settings(settings)
    work = Path(tempfile.mkdtemp(prefix="onsei-export-", dir=_mkdir(settings.scratch_dir)))
    try:
        marker = new_marker()
        # provenance, licence policy, takedowns, test sets (services/ops/provenance)
        try:
            screen = Screen.open(settings, store, shards, dedup, labels,
                                 screening or ScreenOptions.parse(settings.export_licences),
                                 work)
        except ScreenError as e:
            raise ExportError(str(e)) from None
        with staging(dest, settings.scratch_dir, marker) as built, \
                ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
            reads = list(pool.map(
                lambda i: read_shard(i, store, ledger, settings,
                                     screen.policy(policy.for_shard(dedup, i), i),
                                     tokens, work, labels[i], screen.decorate(i)), shards))
            written = write_parts(reads, built, plan, part_bytes)
            try:
                audio = (write_audio(built, written, store, settings, work, shard_segments)
                         if with_audio else [])
            except AudioMissing as e:
                raise ExportError(f"--with-audio: {e}") from None
            described = policy.describe()
            described.pop("dedup", None)
            card = CardInfo(source=redact_text(output_url), tokens=tokens, plan=plan,
                            policy=described,
                            dedup=None if dedup is None else dedup.summary.to_dict(),
                            reads=reads, written=written, audio=audio)
            (built / CARD).write_text(render(card) + provenance_section(
                screen, built, [f for s in written.files.values() for f in s], reads),
                encoding="utf-8")
            seal(built, marker)
            kept: list[str] = []
            if dest is not None:
                kept = publish_local(built, dest)
            else:
                publish_store(built, open_store(to, settings),
                              [f for s in written.files.values() for f in s] + audio)
        return ExportResult(to, reads, written, recovered, kept, screen)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _mkdir(path: str) -> str:
    Path(path).mkdir(parents=True, exist_ok=True)
    return path
