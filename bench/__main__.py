"""``python -m bench`` / ``onsei bench``: run the bench rows and print a table of ratios."""

from __future__ import annotations

import importlib
import json
import sys
import traceback

import click

from bench.registry import MODULES


def _fmt(v: object) -> str:
    if isinstance(v, float):
        return f"{v:.3g}"
    return "" if v is None else str(v)


@click.command()
@click.option("--quick", is_flag=True, help="smaller inputs (CI smoke run)")
@click.option("--only", multiple=True, help="run only these modules (e.g. --only storage)")
@click.option("--json", "as_json", is_flag=True, help="print rows as JSON lines")
@click.option("--check", "guard", is_flag=True,
              help="the quick count rows against bench/check_baseline.json; exit 1 when one "
                   "moved past its margin (bench/check.py)")
def bench(quick: bool, only: tuple[str, ...], as_json: bool, guard: bool) -> None:
    """Run the benchmarks and print named ratios (ours vs baseline, measured in one run)."""
    rows: list[dict] = []
    failed: list[str] = []
    if guard:
        from bench.check import check

        rows, failed = check()
    for mod_name in MODULES if not guard else ():
        if only and mod_name not in only:
            continue
        try:
            mod = importlib.import_module(f"bench.{mod_name}")
            for fn in mod.ROWS:
                rows.extend(fn(quick))
        except Exception as e:  # noqa: BLE001 - one broken row must not hide the others
            traceback.print_exc()
            rows.append({"name": f"{mod_name}: FAILED", "ours": None, "baseline": None,
                         "ratio": None, "goal": str(e)[:80], "unit": ""})
    if as_json:
        for r in rows:
            click.echo(json.dumps(r, default=str))
    else:
        _table(rows)
    for f in failed:
        click.echo(f"FAILED: {f}", err=True)
    if failed:
        sys.exit(1)


def _table(rows: list[dict]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title="onsei bench (ratios measured side by side)")
    for col in ("name", "ours", "baseline", "unit", "ratio", "goal"):
        table.add_column(col)
    for r in rows:
        table.add_row(*(_fmt(r.get(c))
                        for c in ("name", "ours", "baseline", "unit", "ratio", "goal")))
    # A pipe or CI log is not a terminal: give the table room instead of rich's 80 columns.
    Console(width=None if sys.stdout.isatty() else 220).print(table)


if __name__ == "__main__":
    bench()
