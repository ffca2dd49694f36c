"""Wild audio (podcasts, video, broadcast): one row per figure, each with its goal.

Each submodule of this package measures one concern on real recordings (speaker changes,
overlap, music and non-speech, language per segment) and exposes ``ROWS`` like every bench
module; ``python -m bench --only wild`` runs them all, a broken one reported as its own row.
"""

from __future__ import annotations

import importlib
import pkgutil
import traceback
from collections.abc import Callable


def _submodule_rows() -> list[Callable[[bool], list[dict]]]:
    rows: list[Callable[[bool], list[dict]]] = []
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        if info.name.startswith("_"):
            continue
        name = info.name

        def run(quick: bool, name: str = name) -> list[dict]:
            try:
                mod = importlib.import_module(f"{__name__}.{name}")
                out: list[dict] = []
                # modules without ROWS are tools beside the rows (converters, trainers, nets)
                for fn in getattr(mod, "ROWS", ()):
                    out.extend(fn(quick))
                return out
            except Exception as e:  # noqa: BLE001 - one broken set must not hide the others
                traceback.print_exc()
                return [{"name": f"wild.{name}: FAILED", "ours": None, "baseline": None,
                         "ratio": None, "goal": str(e)[:80], "unit": ""}]

        rows.append(run)
    return rows


ROWS = _submodule_rows()
