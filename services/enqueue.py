"""``enqueue-shards``: placeholder until the orchestration issue lands."""

from __future__ import annotations

import sys


def main() -> None:
    print("enqueue-shards: not yet implemented", file=sys.stderr)
    sys.exit(2)
