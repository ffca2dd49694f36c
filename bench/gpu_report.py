"""Result lines of the GPU benches: printed, and appended to ``$OUT/<name>.jsonl`` when the
device tool's ``OUT`` folder is set, so the figures come back even if the run is cut short."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path


def jsonl_emitter(name: str) -> Callable[[dict], None]:
    out_path = Path(os.environ["OUT"]) / f"{name}.jsonl" if os.environ.get("OUT") else None

    def emit(rec: dict) -> None:
        line = json.dumps(rec)
        print(line, flush=True)
        if out_path is not None:
            with open(out_path, "a") as fh:
                fh.write(line + "\n")

    return emit
