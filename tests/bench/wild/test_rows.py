"""``python -m bench --only wild`` gathers rows from the modules that have them; a module
without ``ROWS`` (a converter, a reader, a trainer) is a tool beside them, not a failure."""

from __future__ import annotations

import pkgutil

from bench import wild


def test_a_module_without_rows_gives_no_failed_row() -> None:
    names = [i.name for i in sorted(pkgutil.iter_modules(wild.__path__), key=lambda i: i.name)
             if not i.name.startswith("_")]
    run = wild.ROWS[names.index("onnx_reader")]
    assert run(True) == []
