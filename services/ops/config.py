"""``onsei config``: the effective settings, secrets redacted, each with what set it."""

from __future__ import annotations

import json
import os
from typing import Any

import click

from common.profiles import resolve
from common.renamed import renames_of
from common.setting_names import read_config
from common.settings import Settings
from services.stages import PipelineSettings


def _yaml_keys() -> set[str]:
    cfg = os.environ.get("ONSEI_CONFIG")
    return set(read_config(cfg)) if cfg else set()


def origins(settings: Settings) -> dict[str, str]:
    """``ONSEI_NAME`` -> what set its value: ``env``, ``ONSEI_CONFIG``, ``profile <name>`` or
    ``default`` (a former name counts as the source it came from)."""
    cls = type(settings)
    former: dict[str, list[str]] = {}
    for old, new in renames_of(cls).items():
        former.setdefault(new, []).append(old)
    yaml_keys = _yaml_keys()
    profile = resolve(settings.profile)
    out: dict[str, str] = {}
    for name in cls.model_fields:
        names = [name, *former.get(name, [])]
        if any(f"ONSEI_{n.upper()}" in os.environ for n in names):
            source = "env"
        elif any(n in yaml_keys for n in names):
            source = "ONSEI_CONFIG"
        elif name in profile.values:
            source = f"profile {profile.name}"
        else:
            source = "default"
        out[f"ONSEI_{name.upper()}"] = source
    return out


@click.command()
@click.option("--json", "as_json", is_flag=True, help="machine-readable output")
@click.option("--origins", "with_origins", is_flag=True,
              help="with --json: each value as {value, set_by}")
@click.option("--markdown", is_flag=True,
              help="print the reference of every setting (docs/settings.md) and exit")
def config(as_json: bool, with_origins: bool, markdown: bool) -> None:
    """Print the effective settings (env + ONSEI_CONFIG YAML + profile + defaults), secrets
    redacted, each with what set it: the generic ones, each stage's section, then the corpus
    steps' (``onsei dedup``, ``onsei speakers``: no stage's, not joined)."""
    from services.setting_names import every_settings_class

    if markdown:
        from services.ops.settings_doc import markdown as reference

        click.echo(reference(), nl=False)
        return
    settings = PipelineSettings()
    values = settings.redacted()
    set_by = origins(settings)
    for step in every_settings_class()[1:]:
        extra = step()
        step_set_by = origins(extra)
        for k, v in extra.redacted().items():
            if k not in values:
                values[k], set_by[k] = v, step_set_by[k]
    profile = resolve(settings.profile)
    if as_json:
        shown: dict[str, Any] = values if not with_origins else {
            k: {"value": v, "set_by": set_by[k]} for k, v in values.items()}
        click.echo(json.dumps(shown, indent=2, default=str))
        return
    click.echo(f"profile: {profile.name} (ONSEI_PROFILE={settings.profile}): {profile.summary}")
    width = max(len(k) for k in values)
    vwidth = min(60, max(len(str(v)) for v in values.values()))
    for k, v in values.items():
        click.echo(f"{k:<{width}}  {v!s:<{vwidth}}  [{set_by[k]}]")
