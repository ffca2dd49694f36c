"""Failure records as written (the JSON on the store): what a test checks is what is on disk,
whichever reader (dicts or typed records) the ledger has."""

from __future__ import annotations

import json
from typing import Any


def failure_docs(ledger: Any, stage: str) -> list[dict[str, Any]]:
    prefix = ledger.failed_dir(stage) + "/"
    return [dict(json.loads(ledger.store.read_bytes(k)), key=k)
            for k in ledger.store.list(prefix) if k.endswith(".json")]
