"""``onsei export --output ROOT --to DIR``: the training set of a finished run."""

from __future__ import annotations

import click

from common.redact import redact_text
from services.ops.options import output_option


@click.command()
@output_option("the output root of the run")
@click.option("--to", "to", required=True, help="directory (or s3:// prefix) to write it to")
@click.option("--range", "range_", default=None, help="shard ids A-B (both included)")
@click.option("--no-tokens", "no_tokens", is_flag=True,
              help="from the enhanced sidecars (lines name their FLAC), not the tokens")
@click.option("--validation-fraction", default=0.01, show_default=True, type=float,
              help="share of groups (source files, speakers) in validation")
@click.option("--seed", default=0, show_default=True, type=int, help="seed of the split hash")
@click.option("--with-audio", "with_audio", is_flag=True,
              help="also WebDataset tars (FLAC + JSON per segment) under webdataset/<split>/")
@click.option("--shard-size", "shard_size", default=1000, show_default=True, type=int,
              help="segments per WebDataset tar (--with-audio)")
def export(output_url: str | None, to: str, range_: str | None, no_tokens: bool,
           validation_fraction: float, seed: int, with_audio: bool, shard_size: int) -> None:
    """Filtered, deduplicated JSONL (train/, validation/) and a dataset card (README.md)."""
    from services.ops.enqueue import parse_range
    from services.ops.export.publish import ExportTargetError
    from services.ops.export.run import ExportError
    from services.ops.export.run import export as run_export
    from services.stages import PipelineSettings

    settings = PipelineSettings()
    ids = parse_range(range_, settings.max_range) if range_ else None
    try:
        res = run_export(settings, output_url or settings.output_url, to, ids,
                         tokens=not no_tokens, validation_fraction=validation_fraction,
                         seed=seed, with_audio=with_audio, shard_segments=shard_size)
    except (ExportError, ExportTargetError) as e:
        raise click.ClickException(str(e)) from None
    w = res.written
    for line in res.recovered:
        click.echo(f"left by a killed export: {line}", err=True)
    for r in res.reads:
        if r.error is not None:
            click.echo(f"shard {r.shard_id} left out: {r.error}", err=True)
    refused = sum(sum(r.refused.values()) for r in res.reads)
    if refused:
        click.echo(f"{refused} lines refused (not a number of seconds, an id twice in a shard): "
                   "the card counts them by reason", err=True)
    click.echo(f"{redact_text(to)}: train {w.lines['train']} lines "
               f"({w.seconds['train'] / 3600:.3f} h), validation {w.lines['validation']} lines "
               f"({w.seconds['validation'] / 3600:.3f} h); card {redact_text(to)}/README.md")
