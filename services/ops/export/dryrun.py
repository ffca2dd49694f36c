"""``onsei export --dry-run``: what each filter would remove at the settings given, before a set
is written (docs/quality.md, hearing what was dropped).

Every enhanced shard's sidecars (the annotations enhance wrote, whatever tokenize then did) are
judged by :class:`FilterPolicy` from the settings in force (``ONSEI_FILTER_*``, ``--config``),
with the dedup result where it covers the shard. Nothing is written; the audio is not read.
The lines printed: segments and hours kept, removed per reason, and the share removed per
length class and per speaker (:mod:`services.ops.report.fairness`), with its warnings.
"""

from __future__ import annotations

import posixpath
from collections import Counter, defaultdict
from dataclasses import dataclass, field

from common.settings import Settings
from common.storage import open_store
from common.storage.location import absolute_url
from services.dedup.result import DedupResult
from services.ops.report.fairness import Fairness
from services.ops.report.sidecars import read_sidecars
from services.records import RecordError, corpus_id
from services.rules.policy import FilterPolicy, reason_kind
from services.stages import PIPELINE, open_ledger


@dataclass
class DryRun:
    policy: dict[str, object]
    shards: int = 0
    segments: int = 0
    seconds: float = 0.0
    kept: int = 0
    kept_seconds: float = 0.0
    removed: Counter[str] = field(default_factory=Counter)  # reason kind -> segments
    removed_seconds: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    fairness: Fairness = field(default_factory=Fairness)
    unreadable: list[str] = field(default_factory=list)

    def add(self, seconds: float, speaker: str | None, reasons: list[str]) -> None:
        self.segments += 1
        self.seconds += seconds
        self.fairness.add(seconds, speaker, reasons)
        if not reasons:
            self.kept += 1
            self.kept_seconds += seconds
        for kind in dict.fromkeys(reason_kind(r) for r in reasons):
            self.removed[kind] += 1
            self.removed_seconds[kind] += seconds


def dry_run(settings: Settings, output_url: str, ids: range | None = None,
            policy: FilterPolicy | None = None) -> DryRun:
    """Judge every enhanced segment of the run (of ``ids``) by ``policy`` (default: the
    settings')."""
    store = open_store(absolute_url(output_url), settings)
    ledger = open_ledger(settings, store)
    policy = policy or FilterPolicy.from_settings(settings)
    try:
        dedup = DedupResult.load(store)
    except RecordError:
        dedup = None  # an unusable result: no segment counted as a copy
    described = policy.describe()
    described.pop("dedup", None)
    out = DryRun(described)
    for shard in sorted(ledger.done_ids("enhance", ids)):
        if ids is not None and shard not in ids:
            continue
        key = PIPELINE.output_key("enhance", settings, shard)
        metas, bad = read_sidecars(store, key, settings.max_member_bytes, settings.scratch_dir)
        if bad:
            out.unreadable.append(f"{posixpath.basename(key)}: {bad} member(s) unreadable")
        judge = policy.for_shard(dedup, shard)
        out.shards += 1
        for seg, meta in metas:
            speaker = corpus_id(meta.speaker_id, shard) if meta.speaker_id else None
            out.add(float(meta.duration_seconds or 0.0), speaker,
                    judge.reasons(meta.quality.filterable() if meta.quality else None, seg))
    return out


def lines(d: DryRun) -> list[str]:
    """The dry run as printed."""
    def share(seconds: float) -> str:
        return f"{100 * seconds / d.seconds:.1f} %" if d.seconds else "-"

    out = [(f"dry run: {d.shards} enhanced shards, {d.segments} segments "
            f"({d.seconds / 3600:.3f} h); nothing written"),
           "policy: " + ", ".join(f"{k}={v}" for k, v in d.policy.items()),
           f"kept: {d.kept} segments ({d.kept_seconds / 3600:.3f} h, {share(d.kept_seconds)})"]
    for kind, n in sorted(d.removed.items(), key=lambda kv: -d.removed_seconds[kv[0]]):
        s = d.removed_seconds[kind]
        out.append(f"  {kind}: would remove {n} segments ({s / 3600:.3f} h, {share(s)})")
    for by in ("length", "speaker"):
        headers, rows = d.fairness.table(by)
        if rows:
            out.append(f"removed by {by}: " + " | ".join(headers[1:]))
            out += [f"  {r[0]}: " + " | ".join(r[1:]) for r in rows]
    out += [f"warning: {w}" for w in d.fairness.warnings()]
    out += [f"unreadable: {u}" for u in d.unreadable]
    return out
