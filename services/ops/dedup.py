"""``onsei dedup --output ROOT [--range A-B]``: corpus-wide near-duplicate detection
(services/dedup/run.py, docs/dedup.md)."""

from __future__ import annotations

import click

from services.ops.options import output_option, output_settings


@click.command()
@output_option()
@click.option("--range", "range_", default=None,
              help="index only the new shards with ids A-B (both included) or N; the matching "
                   "is always against every shard indexed before")
def dedup(output_url: str | None, range_: str | None) -> None:
    """Find copies of one recording across the corpus; writes dedup/duplicates.jsonl and
    dedup/summary.json under the output root. Incremental: indexes only new shards."""
    from common.display import visible
    from common.storage import open_store
    from services.dedup.index import IndexBusy
    from services.dedup.parts import DedupPartError
    from services.dedup.run import Deduper, NothingToDedup, Progress
    from services.dedup.settings import DedupSettings
    from services.ops.enqueue import parse_range
    from services.rules.policy import FilterPolicy
    from services.rules.settings import FilterSettings
    from services.stages import open_ledger

    settings = DedupSettings(**output_settings(output_url))
    # the copy kept is one the filter rules pass: the same settings tokenize reads build them
    policy = FilterPolicy.from_settings(FilterSettings(**output_settings(output_url)))
    ids = parse_range(range_, settings.max_range) if range_ else None
    store = open_store(settings.output_url, settings)
    ledger = open_ledger(settings, store)

    def progress(p: Progress, total: int) -> None:
        click.echo(f"indexed {p.indexed}/{total} new shards, {p.segments} segments, "
                   f"{p.confirmed} pairs confirmed of {p.candidates} candidates", err=True)

    try:
        s = Deduper(settings, store, ledger, policy=policy).run(ids, progress)
    except (NothingToDedup, IndexBusy, DedupPartError) as e:
        raise click.ClickException(str(e)) from None
    click.echo(f"{len(s.shards)} shards, {s.segments} segments: {s.clusters} clusters, "
               f"{s.duplicate_segments} duplicates ({s.duplicate_seconds / 3600:.2f} h)")
    for key, why in s.bad_signatures.items():
        click.echo(visible(f"  left out: {key}: {why}"), err=True)
