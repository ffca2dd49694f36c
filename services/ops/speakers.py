"""``onsei speakers --output ROOT [--range A-B]``: one speaker label across the corpus
(services/speakers/run.py, docs/speakers.md)."""

from __future__ import annotations

import click

from services.ops.options import output_option, output_settings


@click.command()
@output_option()
@click.option("--range", "range_", default=None,
              help="link only the new shards with ids A-B (both included) or N; they are "
                   "always linked against every speaker found before")
def speakers(output_url: str | None, range_: str | None) -> None:
    """Link each file's speakers to corpus speakers; writes speakers/<shard>.jsonl and
    speakers/summary.json under the output root. Incremental: links only new shards, and a
    label given is never changed."""
    from common.display import visible
    from common.storage import open_store
    from services.ops.enqueue import parse_range
    from services.speakers.parts import SpeakersPartError
    from services.speakers.run import NothingToLink, Progress, SpeakerLinker, SpeakersStateError
    from services.speakers.settings import SpeakersSettings
    from services.stages import open_ledger

    settings = SpeakersSettings(**output_settings(output_url))
    ids = parse_range(range_, settings.max_range) if range_ else None
    store = open_store(settings.output_url, settings)
    ledger = open_ledger(settings, store)

    def progress(p: Progress, total: int) -> None:
        click.echo(f"linked {p.linked}/{total} new shards, {p.segments} segments, "
                   f"{p.file_speakers} file speakers, {p.new_speakers} new corpus speakers",
                   err=True)

    try:
        s = SpeakerLinker(settings, store, ledger).run(ids, progress)
    except (NothingToLink, SpeakersStateError, SpeakersPartError) as e:
        raise click.ClickException(str(e)) from None
    click.echo(f"{len(s.shards)} shards, {s.segments} segments: {s.file_speakers} file "
               f"speakers, {s.speakers} corpus speakers")
    for key, why in s.bad_files.items():
        click.echo(visible(f"  left out: {key}: {why}"), err=True)
