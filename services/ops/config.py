"""``onsei config``: the effective settings, secrets redacted."""

from __future__ import annotations

import json

import click

from services.stages import PipelineSettings


@click.command()
@click.option("--json", "as_json", is_flag=True, help="machine-readable output")
def config(as_json: bool) -> None:
    """Print the effective settings (env + ONSEI_CONFIG YAML + defaults), secrets redacted:
    the generic ones, each stage's section, then the corpus steps' (``onsei dedup``,
    ``onsei speakers``: no stage's, not joined)."""
    from services.setting_names import every_settings_class

    values = PipelineSettings().redacted()
    for step in every_settings_class()[1:]:
        values.update({k: v for k, v in step().redacted().items() if k not in values})
    if as_json:
        click.echo(json.dumps(values, indent=2, default=str))
        return
    width = max(len(k) for k in values)
    for k, v in values.items():
        click.echo(f"{k:<{width}}  {v}")
