"""``onsei run --input URL --output URL --range A-B [--stages asr,enhance,tokenize] [--force]``."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, TypedDict

import click

from services.ops.options import output_option
from services.stages import STAGES, PipelineSettings, Settings

if TYPE_CHECKING:
    from services.ops.runner import StageSummary


class RunOverride(TypedDict, total=False):
    """The settings' keyword arguments ``--input`` and ``--output`` set, each only when given."""

    input_url: str
    output_url: str


@click.command()
@click.option("--input", "input_url", default=None, help="raw shards URL [settings.input_url]")
@output_option("the output root")
@click.option("--range", "range_", required=True, help="shard ids A-B (both included) or N")
@click.option("--stages", default=",".join(STAGES), show_default=True,
              help="comma-separated stages to run, in pipeline order")
@click.option("--force", is_flag=True, help="redo shards even when their done record exists")
def run(input_url: str | None, output_url: str | None, range_: str, stages: str,
        force: bool) -> None:
    """The whole pipeline in one process, without a broker; skips work already done."""
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TaskID,
        TextColumn,
        TimeElapsedColumn,
    )

    from common.display import visible
    from common.stages.preflight import check_input_root, check_output_root
    from services.ops.enqueue import parse_range
    from services.ops.runner import Runner

    wanted = [s.strip() for s in stages.split(",") if s.strip()]
    bad = [s for s in wanted if s not in STAGES]
    if bad or not wanted:
        raise click.BadParameter(f"unknown stage(s) {bad}; choose from {', '.join(STAGES)}")
    update = RunOverride()
    if input_url:
        update["input_url"] = input_url
    if output_url:
        update["output_url"] = output_url
    settings = PipelineSettings(**update)  # validated, ONSEI_* + ONSEI_CONFIG underneath
    ids = parse_range(range_, settings.max_range)
    # before any model loads: the input is there (when asr runs) and the output is writable
    if STAGES[0] in wanted:
        check_input_root(settings.input_url, settings)
    check_output_root(settings.output_url, settings)
    con = Console(stderr=True)
    bars: dict[str, TaskID] = {}
    with Progress(TextColumn("{task.description:<9}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), console=con, transient=False) as prog:

        def progress(stage: str, advance: int, total: int) -> None:
            if stage not in bars:
                bars[stage] = prog.add_task(stage, total=total)
            prog.update(bars[stage], advance=advance, total=total)

        summaries = Runner(settings, wanted, force).run(ids, progress)
    failed = False
    for s in summaries:
        click.echo(visible(summary_line(s)))
        for shard_id, reason in s.failed.items():
            click.echo(visible(f"  shard {shard_id}: {reason}"), err=True)
        if s.error:
            click.echo("  the earlier stages' outputs are saved; fix this and run again to "
                       "continue from here.", err=True)
        failed = failed or bool(s.error or s.failed)
    if not failed:
        for line in next_steps(settings, wanted, range_):
            click.echo(line)
    sys.exit(1 if failed else 0)


def next_steps(settings: Settings, wanted: list[str], range_: str) -> list[str]:
    """What the stages after the last one run need, and the command that runs them: a run
    that stopped early on purpose (``--stages``) ends by saying how to go on."""
    from services.stages import PIPELINE

    last = max(STAGES.index(s) for s in wanted)
    later = STAGES[last + 1:]
    if not later:
        return []
    command = (f"onsei run --output {settings.output_url} --range {range_} "
               f"--stages {','.join(later)}")
    lines = [f"next: {', '.join(later)} (not asked for with --stages): {command}"]
    for spec in PIPELINE.specs:
        if spec.name not in later:
            continue
        names = [m.name for m in spec.load_models(settings)]
        if names:
            lines.append(f"  {spec.name} needs {', '.join(names)}: in the model cache "
                         f"({settings.model_cache}) after `onsei models fetch --only "
                         f"{spec.name}` on a machine that reaches the hub, or its model setting "
                         f"(`onsei config | grep {spec.name.upper()}`) naming a folder or s3:// "
                         f"prefix that holds it")
    return lines


def summary_line(s: StageSummary) -> str:
    """One line per stage; a stage that could not start says so and why, never "waiting"."""
    if s.error:
        n = len(s.not_run)
        return f"{s.stage}: not run: {s.error} [{n} shard{'' if n == 1 else 's'} ready for it]"
    return (f"{s.stage}: processed {len(s.processed)}, already done {len(s.skipped_done)}, "
            f"failed {len(s.failed)}, waiting {len(s.waiting)} | "
            f"{s.audio_seconds_in / 3600:.3f} h in, {s.audio_seconds_out / 3600:.3f} h out, "
            f"{s.seconds:.1f}s")
