"""`onsei fleet --config deploy/fleet.yaml [--dry-run] [--once]`."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from services.ops.fleet.config import FleetConfig
    from services.ops.fleet.loop import CycleReport
    from services.ops.fleet.sky import JobInfo, SkyClient


@click.command()
@click.option("--config", "config_path", default="deploy/fleet.yaml", show_default=True,
              type=click.Path(exists=True, dir_okay=False), help="fleet file")
@click.option("--dry-run", is_flag=True,
              help="print what one cycle would launch/cancel; change nothing")
@click.option("--once", is_flag=True, help="one cycle, then exit")
@click.option("--sky", "sky_path", default=None, help="path of the `sky` CLI")
@click.option("--suggest", is_flag=True, help="print node counts per stage that balance the "
              "stages' measured rates (from done records); launch nothing")
@click.option("--total", type=int, default=None, help="with --suggest: nodes to split "
              "[default: the fleet file's counts / backlog maxima summed]")
def fleet(config_path: str, dry_run: bool, once: bool, sky_path: str | None, suggest: bool,
          total: int | None) -> None:
    """Keep target counts of SkyPilot managed spot jobs per stage (fixed or following backlog)."""
    from services.ops.fleet.backlog import redis_backlog
    from services.ops.fleet.config import load_config
    from services.ops.fleet.loop import Fleet
    from services.ops.fleet.sky import SkyCliClient

    cfg = load_config(config_path)
    if suggest:
        _suggest(cfg, total)
        return
    backlog = None
    if any(t.backlog for t in cfg.targets.values()):
        url = os.environ.get(cfg.broker_url_env)
        if not url:
            from services.stages import PipelineSettings

            url = PipelineSettings().broker_url.get_secret_value()
        backlog = redis_backlog(url)
    from common.display import visible

    try:
        client: SkyClient = SkyCliClient(sky_path)
    except RuntimeError as e:
        if not dry_run:
            raise click.ClickException(str(e)) from e
        click.echo(visible(f"warning: {e}; dry run against an empty job list"), err=True)
        client = _NoJobs()
    f = Fleet(cfg, client, backlog)

    def show(rep: CycleReport) -> None:
        verb = "would launch" if dry_run else "launched"
        click.echo(rep.summary())
        for target, name, cloud in rep.launched:
            click.echo(f"  {verb} {name} ({target}{', ' + cloud if cloud else ''})")
        for target, job_id in rep.cancelled:
            click.echo(f"  {'would cancel' if dry_run else 'cancelled'} job {job_id} ({target})")
        for target, n in rep.capped.items():
            click.echo(f"  {target}: {n} launches held: provider caps reached")
        for err in rep.errors:  # sky's own text: colour codes and all, shown not obeyed
            click.echo(visible(f"  error: {err}"), err=True)

    f.run(cycles=1 if (once or dry_run) else None, dry_run=dry_run, on_cycle=show)


def _suggest(cfg: FleetConfig, total: int | None) -> None:
    from services.ops.fleet.sizing import balance, measured_rates, render
    from services.stages import STAGES, PipelineSettings

    current: dict[str, int] = {}
    for name, t in cfg.targets.items():
        stage = t.backlog.queue if t.backlog else name
        if stage in STAGES:
            current[stage] = current.get(stage, 0) + (t.backlog.max if t.backlog else t.count)
    rates = measured_rates(PipelineSettings())
    nodes = balance(rates, total if total is not None else sum(current.values()))
    for line in render(rates, nodes, current):
        click.echo(line)


class _NoJobs:
    """Dry run without SkyPilot installed: no jobs, and nothing is ever launched."""

    def queue(self) -> list[JobInfo]:
        return []

    def launch(self, template: str, name: str, *, gpus: str | None = None,
               cloud: str | None = None, env: list[str] | None = None) -> None:
        raise RuntimeError("dry run")

    def cancel(self, job_ids: list[int]) -> None:
        raise RuntimeError("dry run")
