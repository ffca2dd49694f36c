"""docs/benchmarks.md: every figure names the command that reproduces it, and each command names
a bench module that exists (a registered row module for ``--only``)."""

from __future__ import annotations

import re
from importlib.util import find_spec
from pathlib import Path

from bench.registry import MODULES

DOC = Path(__file__).resolve().parents[2] / "docs" / "benchmarks.md"


def _rows() -> list[list[str]]:
    lines = [ln for ln in DOC.read_text().splitlines() if ln.startswith("| ")]
    return [[c.strip() for c in ln.strip().strip("|").split("|")] for ln in lines[1:]]


def test_every_row_says_how_to_reproduce_it():
    rows = _rows()
    assert len(rows) >= 20
    for cells in rows:
        assert re.fullmatch(r"`python -m bench[ .].*`", cells[-1]), cells[0]


def test_every_command_names_a_real_bench_module():
    for cells in _rows():
        cmd = cells[-1].strip("`")
        only = re.search(r"--only (\w+)", cmd)
        if only:
            assert only.group(1) in MODULES, cmd
        else:
            module = cmd.split()[2]
            assert find_spec(module) is not None, cmd
