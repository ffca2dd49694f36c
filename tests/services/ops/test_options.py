"""Every command that reads a run's output root takes it the same way: ``--output URL``,
ONSEI_OUTPUT_URL when not given."""

from __future__ import annotations

import importlib

import pytest

from services.ops.cli import SUBCOMMANDS


@pytest.mark.parametrize("name", ["run", "status", "report", "dedup", "export", "takedown"])
def test_one_output_option_across_the_commands(name) -> None:
    module, attr = SUBCOMMANDS[name].split(":")
    command = getattr(importlib.import_module(module), attr)
    found = [p for p in command.params if "--output" in p.opts]
    assert len(found) == 1, f"onsei {name} takes no --output"
    opt = found[0]
    assert opt.name == "output_url" and opt.opts == ["--output"] and opt.default is None
    assert opt.metavar == "URL" and opt.help.endswith("(default: ONSEI_OUTPUT_URL)")
