"""``onsei deploy [--write | --check] [--root DIR]``: each stage's worker image, SkyPilot task
and compose service, as its spec says (services/ops/deploy/render.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import click


def planned(root: Path) -> dict[Path, str]:
    """Every deploy file the pipeline's stages make, with its text."""
    from services.ops.deploy.render import Entry, compose, dockerfile, skypilot
    from services.pipeline import PACKAGES, PIPELINE

    entries = [Entry(s.name, PACKAGES[s.name], s.deploy) for s in PIPELINE.specs if s.deploy]
    out = {}
    for e in entries:
        out[root / "deploy/docker" / f"Dockerfile.{e.stage}"] = dockerfile(e)
        out[root / "deploy/skypilot" / f"{e.stage}.yaml"] = skypilot(e)
    compose_file = root / "docker-compose.yml"
    try:
        out[compose_file] = compose(compose_file.read_text(), entries)
    except (OSError, ValueError) as e:
        raise click.ClickException(f"{compose_file}: {e}") from None
    return out


@click.command()
@click.option("--write", is_flag=True, help="write the files that differ")
@click.option("--check", is_flag=True, help="exit 1 when a file differs from its spec's")
@click.option("--root", type=click.Path(file_okay=False, path_type=Path), default=Path("."),
              show_default=True, help="the checkout holding deploy/ and docker-compose.yml")
def deploy(write: bool, check: bool, root: Path) -> None:
    """Each stage's worker image (deploy/docker), SkyPilot task (deploy/skypilot) and compose
    service, from its spec; lists the files that differ, and a fleet target to add for a
    stage deploy/fleet.yaml does not name yet."""
    import yaml

    from services.ops.deploy.render import Entry, fleet_target
    from services.pipeline import PACKAGES, PIPELINE

    stale = [p for p, text in planned(root).items() if not p.is_file() or p.read_text() != text]
    for p, text in planned(root).items():
        if p in stale and write:
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(text)
    for p in stale:
        click.echo(f"{'wrote' if write else 'differs'}: {p}")
    try:
        targets = yaml.safe_load((root / "deploy/fleet.yaml").read_text())["targets"] or {}
    except (OSError, KeyError, TypeError, yaml.YAMLError):
        targets = {}
    for s in PIPELINE.specs:
        if s.deploy and s.name not in targets:
            click.echo(f"deploy/fleet.yaml has no target {s.name!r}; under targets:\n"
                       + fleet_target(Entry(s.name, PACKAGES[s.name], s.deploy)))
    if check and stale and not write:
        sys.exit(1)
