"""``onsei export --output ROOT --to DIR``: the training set of a finished run."""

from __future__ import annotations

import click

from common.display import visible
from common.redact import redact_text
from services.ops.options import output_option


@click.command()
@output_option("the output root of the run")
@click.option("--to", "to", default=None,
              help="directory (or s3:// prefix) to write it to (required unless --dry-run)")
@click.option("--dry-run", "dry_run", is_flag=True,
              help="print what each filter would remove at the settings in force; write nothing")
@click.option("--range", "range_", default=None, help="shard ids A-B (both included)")
@click.option("--no-tokens", "no_tokens", is_flag=True,
              help="from the enhanced sidecars (lines name their FLAC), not the tokens")
@click.option("--validation-fraction", default=0.01, show_default=True, type=float,
              help="share of groups (source files, speakers) in validation")
@click.option("--test-fraction", default=0.0, show_default=True, type=float,
              help="share of groups in a test split (0: none)")
@click.option("--max-hours-per-speaker", default=None, type=float,
              help="at most this many hours of one voice (corpus speaker, else file label)")
@click.option("--max-hours-per-source", default=None, type=float,
              help="at most this many hours of one source file")
@click.option("--seed", default=0, show_default=True, type=int,
              help="seed of the split and cap hashes")
@click.option("--with-audio", "with_audio", is_flag=True,
              help="also WebDataset tars (FLAC + JSON per segment) under webdataset/<split>/")
@click.option("--shard-size", "shard_size", default=1000, show_default=True, type=int,
              help="segments per WebDataset tar (--with-audio)")
@click.option("--licences", default=None,
              help="keep only these licences (SPDX ids, comma-separated; `unknown`: files "
                   "without metadata); default ONSEI_EXPORT_LICENCES, else every licence")
@click.option("--exclude-test-sets", "test_sets", multiple=True, type=click.Path(
    exists=True, file_okay=False), help="folder of a test set (audio + transcripts): training "
    "segments holding its audio or words are removed (repeatable; docs/provenance.md)")
def export(output_url: str | None, to: str | None, dry_run: bool, range_: str | None,
           no_tokens: bool, validation_fraction: float, test_fraction: float,
           max_hours_per_speaker: float | None, max_hours_per_source: float | None, seed: int,
           with_audio: bool, shard_size: int, licences: str | None,
           test_sets: tuple[str, ...]) -> None:
    """Filtered, deduplicated JSONL (train/, validation/, test/) and a dataset card."""
    from services.ops.enqueue import parse_range
    from services.ops.export.caps import Caps
    from services.ops.export.publish import ExportTargetError
    from services.ops.export.run import ExportError
    from services.ops.export.run import export as run_export
    from services.ops.export.write import SplitPlan, group_warning
    from services.ops.provenance.report import stderr_lines
    from services.ops.provenance.screen import ScreenOptions
    from services.stages import PipelineSettings

    settings = PipelineSettings()
    ids = parse_range(range_, settings.max_range) if range_ else None
    if dry_run:
        from services.ops.export.dryrun import dry_run as run_dry
        from services.ops.export.dryrun import lines

        for line in lines(run_dry(settings, output_url or settings.output_url, ids)):
            click.echo(visible(line))
        return
    if to is None:
        raise click.UsageError("Missing option '--to' (or --dry-run).")
    plan = SplitPlan(seed, validation_fraction, test_fraction,
                     Caps(max_hours_per_speaker, max_hours_per_source))
    screening = ScreenOptions.parse(settings.export_licences if licences is None else licences,
                                    test_sets)
    for odd in screening.unknown_licences():
        click.echo(f"warning: --licences {odd}: not an SPDX id onsei knows; kept as given "
                   "(matched exactly)", err=True)
    try:
        res = run_export(settings, output_url or settings.output_url, to, ids,
                         tokens=not no_tokens, with_audio=with_audio, shard_segments=shard_size,
                         plan=plan, screening=screening)
    except (ExportError, ExportTargetError) as e:
        raise click.ClickException(str(e)) from None
    w = res.written
    for line in res.recovered:
        click.echo(visible(f"left by a killed export: {line}"), err=True)
    if res.kept:
        click.echo(visible(f"kept in {to} (not written by onsei export): "
                           + ", ".join(res.kept[:10])
                           + (f" and {len(res.kept) - 10} more" if len(res.kept) > 10 else "")),
                   err=True)
    for r in res.reads:
        if r.error is not None:
            click.echo(visible(f"shard {r.shard_id} left out: {r.error}"), err=True)
    refused = sum(sum(r.refused.values()) for r in res.reads)
    if refused:
        click.echo(f"{refused} lines refused (not a number of seconds, an id twice in a shard): "
                   "the card counts them by reason", err=True)
    for cap, n in sorted(w.capped.segments.items()):
        click.echo(f"--{cap.replace('_', '-')}: {n} lines left out "
                   f"({w.capped.seconds[cap] / 3600:.3f} h)", err=True)
    for line in stderr_lines(res.reads, res.screen):
        click.echo(line, err=True)
    warning = group_warning(w, plan)
    if warning:
        click.echo(f"warning: {warning} (the card's Splits)", err=True)
    splits = ", ".join(f"{s} {w.lines[s]} lines ({w.seconds[s] / 3600:.3f} h)"
                       for s in ("train", "validation", "test") if s != "test" or w.lines[s])
    click.echo(f"{redact_text(to)}: {splits}; card {redact_text(to)}/README.md")
