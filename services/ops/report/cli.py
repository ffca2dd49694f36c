"""``onsei report``: what a run produced, as a summary and an optional self-contained HTML page."""

from __future__ import annotations

import json
from pathlib import Path

import click

from common.display import visible
from common.redact import redact_text
from services.ops.options import output_option
from services.stages import PipelineSettings


@click.command()
@output_option("the output root to report on")
@click.option("--html", "html_path", type=click.Path(dir_okay=False, path_type=Path),
              default=None, help="write the HTML report (charts inline) here")
@click.option("--json", "as_json", is_flag=True, help="print the summary as JSON")
@click.option("--range", "range_", default=None,
              help="the run's shard ids A-B: projects hours and cost to finish them")
@click.option("--listen-shards", default=8, show_default=True, type=click.IntRange(min=0),
              help="--html: enhanced shards whose dropped and near-threshold segments the page "
              "plays (0: none)")
def report(output_url: str | None, html_path: Path | None, as_json: bool,
           range_: str | None, listen_shards: int) -> None:
    """Hours in / kept / out, languages, segment lengths, drop reasons, speed, cost, failures."""
    from services.ops.enqueue import parse_range
    from services.ops.report.collect import collect, to_json
    from services.ops.report.target import ReportTargetError, check_html_target, write_html

    settings = PipelineSettings()
    url = output_url or settings.output_url
    try:  # before the run is read: a refused path costs nothing
        target = None if html_path is None else check_html_target(html_path, url)
    except ReportTargetError as e:
        raise click.ClickException(str(e)) from None
    ids = parse_range(range_, settings.max_range) if range_ else None
    data = collect(url, settings, total_shards=None if ids is None else len(ids))
    summary = to_json(data)
    if as_json:
        click.echo(json.dumps(summary, indent=2, default=str))
    else:
        h = summary["hours"]
        click.echo(f"{redact_text(url)}: {data.files} files, {data.files_ok} kept; "
                   f"hours in {h['asr_in']:.3f}, kept {h['kept']:.3f}, tokens {h['tokens']:.3f}")
        for stage, st in summary["stages"].items():
            click.echo(f"  {stage:<9} done {st['done']:>6}  failed {st['failed']:>4}  "
                       f"dead {st['dead_lettered']:>4}  {st['realtime_factor']:.3g}x real time")
        from services.ops.costs import render_lines

        for line in render_lines(data.cost):
            click.echo(visible(line))
        for step in data.corpus:
            click.echo(visible(f"  {step.line()}"))
        from services.ops.report.dedup import text_lines

        for line in text_lines(data.dedup):
            click.echo(visible(line))
    if target is not None:
        from services.ops.report.listen import section
        from services.ops.report.render import render_html

        write_html(target, render_html(data, section(url, settings, listen_shards)))
        click.echo(f"wrote {html_path}", err=as_json)
