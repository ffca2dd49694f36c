"""docs/settings.md is generated from the settings classes: it names every setting with its
default and a one-line reason to change it, and cannot drift from the code."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

ROOT = Path(__file__).resolve().parents[3]


def test_committed_reference_is_what_the_code_generates():
    from services.ops.settings_doc import markdown

    committed = (ROOT / "docs" / "settings.md").read_text()
    assert committed == markdown(), "run: onsei config --markdown > docs/settings.md"


def test_every_setting_says_what_it_is_for():
    from services.ops.settings_doc import sections

    missing = [n for _, fields in sections() for n, f in fields.items()
               if not (f.description or "").strip()]
    assert missing == []


def test_onsei_config_markdown_prints_it(clean_env):
    from services.ops.cli import cli

    res = CliRunner().invoke(cli, ["config", "--markdown"])
    assert res.exit_code == 0 and res.output.startswith("# Settings")
    assert "| `ONSEI_PROFILE` | `auto` |" in res.output
