"""``enqueue-shards --range 0-50000 [--stage asr] [--until tokenize] [--force] [--dry-run]``.

Reconciles the ledger with the queues (docs/architecture.md): for every shard of the range, the
first stage from ``--stage`` to ``--until`` without a done record is where it is enqueued, unless a
message for it is already on its way (the Redis queued sets). So after Redis is lost, running this
again re-enqueues exactly what is missing, and a shard whose ASR is done but whose enhance message
was lost resumes at enhance. Dead-lettered shards are left alone unless ``--retry-failed``.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field

import click

from common.ledger.index import valid_done
from common.queue.messages import MAX_SHARD_ID
from common.settings import Settings, one_of
from common.stages.preflight import check_input_root
from services.ops.errors import friendly
from services.stages import PIPELINE, STAGES, PipelineSettings, open_ledger


def parse_range(text: str, max_ids: int | None = None) -> range:
    """``0-999``: shards 0 to 999, both included (1,000 shards); ``7``: one shard. A range is
    a ``range``, never a set of its ids: only its size is checked against ``max_ids``
    (``ONSEI_MAX_RANGE``), so ``0-99999999999`` is refused at once instead of exhausting memory.
    Each bound is checked against the largest shard id before it becomes a number, and the size
    is counted without ``len()`` (which overflows past 2**63 - 1)."""
    shown = text if len(text) <= 60 else f"{text[:40]}... ({len(text)} characters)"
    # ASCII digits only: int() also reads "１２" or "٣" (what a shell shows is not what runs)
    m = re.fullmatch(r"([0-9]+)(?:-([0-9]+))?", text.strip(), re.ASCII)
    if m is None:
        raise click.BadParameter(f"expected A-B or N (ASCII digits), got {shown!r}")
    a, b = m.group(1), m.group(2) or m.group(1)
    if any(len(d.lstrip("0")) > len(str(MAX_SHARD_ID)) for d in (a, b)) or int(b) > MAX_SHARD_ID:
        # a worker would refuse every such message
        raise click.BadParameter(f"shard ids go up to {MAX_SHARD_ID} (2**63 - 1), got {shown!r}")
    start, last = int(a), int(b)
    if last < start:
        raise click.BadParameter(f"empty range {shown!r}: its first id is above its last")
    count = last - start + 1
    if max_ids is not None and count > max_ids:
        raise click.BadParameter(
            f"range {shown} names {count:,} shards, more than ONSEI_MAX_RANGE={max_ids:,}; "
            "split it into smaller ranges or raise ONSEI_MAX_RANGE")
    return range(start, last + 1)


@dataclass
class Plan:
    to_enqueue: dict[str, list[int]] = field(default_factory=dict)  # stage -> ids
    done: int = 0
    queued: int = 0
    failed: int = 0
    waiting: int = 0  # the stage before --stage is not done: nothing to work on yet
    redis_ok: bool = True

    @property
    def enqueued(self) -> int:
        return sum(len(v) for v in self.to_enqueue.values())


def plan(settings: Settings, ids: range, stage: str, until: str, force: bool,
         retry_failed: bool) -> Plan:
    from common.queue.tracking import Tracker

    chain = PIPELINE.chain(stage, until)
    p = Plan({s: [] for s in chain})
    tracker = Tracker(settings)
    p.redis_ok = tracker.client is None or tracker.available()
    ledger = open_ledger(settings)
    before = PIPELINE.previous(stage)
    # the ids are streamed from the range; only done ids (what exists) are ever held in sets
    ready = ids if before is None else valid_done(ledger, before, ids)
    p.waiting = len(ids) - len(ready)
    if force:
        p.to_enqueue[stage] = [i for i in ids if i in ready]
        return p
    done = {s: valid_done(ledger, s, ids) for s in chain}
    dead: dict[str, set[int]] = {}
    if not retry_failed:  # failure records are few: reading each is cheap
        dead = {s: {r.shard_id for r in ledger.failures(s)
                    if r.dead_lettered and r.shard_id is not None}
                for s in chain}
    queued: set[int] = set()
    if p.redis_ok:
        for s in STAGES:
            if tracker.queue_length(s) == 0 and tracker.unacked_count(s) == 0:
                tracker.clear_queued(s)  # nothing on its way: the set is stale (a purge)
                continue
            queued |= tracker.queued_ids(s)
    for i in ids:
        if i not in ready:
            continue
        first = next((s for s in chain if i not in done[s]), None)
        if first is None:
            p.done += 1
        elif i in queued:
            p.queued += 1
        elif i in dead.get(first, ()):
            p.failed += 1
        else:
            p.to_enqueue[first].append(i)
    return p


def enqueue(settings: Settings, ids: range, stage: str, until: str, force: bool = False,
            dry_run: bool = False, retry_failed: bool = False) -> Plan:
    p = plan(settings, ids, stage, until, force, retry_failed)
    if dry_run or not p.enqueued:
        return p
    if not p.redis_ok:
        raise click.ClickException("the broker (Redis) is unreachable; nothing enqueued")
    from common.queue.publish import publish_shards
    from services.stages import make_app

    app = make_app("onsei", settings)
    for s, todo in p.to_enqueue.items():
        publish_shards(app, s, todo, until, force=force)
    return p


def corpus_notes(settings: Settings, p: Plan, until: str) -> list[str]:
    """A line per corpus step whose applying stage the enqueued shards reach before its
    result covers them: that stage does not wait for it, so the operator hears it now."""
    from common.storage import open_store
    from services.ops.corpus import uncovered

    notes = []
    for step in PIPELINE.corpus_steps:
        if step.applied_by not in PIPELINE.chain(PIPELINE.names[0], until):
            continue
        reach = PIPELINE.names.index(step.applied_by)
        ids = [i for s, todo in p.to_enqueue.items() if PIPELINE.names.index(s) <= reach
               for i in todo]
        if not ids:
            continue
        n, error = uncovered(step, open_store(settings.output_url, settings), ids)
        if error:
            notes.append(f"{step.name}: result unreadable ({error})")
        elif n:
            notes.append(f"{step.name}: {n} of the {len(ids)} shards enqueued reach "
                         f"{step.applied_by} before it covers them (`onsei {step.name}` once "
                         f"they are done at {step.after}; {step.applied_by} does not wait)")
    return notes


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--range", "range_", required=True, help="shard ids A-B (both included) or N")
@click.option("--stage", type=click.Choice(STAGES), default=STAGES[0], show_default=True,
              help="first stage to (re)run")
@click.option("--until", type=click.Choice(STAGES), default=None,
              help="last stage of the chain [default: settings.until]")
@click.option("--force", is_flag=True, help="enqueue every shard at --stage even when done")
@click.option("--retry-failed", is_flag=True, help="also enqueue dead-lettered shards")
@click.option("--dry-run", is_flag=True, help="count only, publish nothing")
@friendly
def main(range_: str, stage: str, until: str | None, force: bool, retry_failed: bool,
         dry_run: bool) -> None:
    """Enqueue the shards of a range whose stages are not done (and not already queued)."""
    from services.setting_names import check_every_name

    check_every_name()
    settings = PipelineSettings()
    try:
        until = one_of(until or settings.until or PIPELINE.last, STAGES, "stage")
    except ValueError as e:
        raise click.ClickException(f"ONSEI_UNTIL: {e}") from None
    if STAGES.index(until) < STAGES.index(stage):
        raise click.BadParameter(f"--until {until} comes before --stage {stage}")
    ids = parse_range(range_, settings.max_range)
    if stage == PIPELINE.names[0]:  # the raw shards must be there before anything is promised
        check_input_root(settings.input_url, settings)
    t0 = time.perf_counter()
    p = enqueue(settings, ids, stage, until, force, dry_run, retry_failed)
    dt = time.perf_counter() - t0
    per_stage = ", ".join(f"{s}={len(v)}" for s, v in p.to_enqueue.items() if v) or "none"
    verb = "would enqueue" if dry_run else "enqueued"
    skipped = p.done + p.queued + p.failed + p.waiting
    waiting = f", waiting for {PIPELINE.previous(stage)} {p.waiting}" if p.waiting else ""
    click.echo(f"{verb} {p.enqueued} ({per_stage}); skipped {skipped} (done {p.done}, "
               f"queued {p.queued}, dead-lettered {p.failed}{waiting}) in {dt:.2f}s")
    for note in corpus_notes(settings, p, until):
        click.echo(note)


if __name__ == "__main__":
    main()
