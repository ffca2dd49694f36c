"""The sidecars of one enhanced tar (``enhanced/<shard>.tar``): where enhance writes each
segment's annotations, read for a shard that has no tokens yet. The tar is fetched to a
temporary file; the audio is skipped, not decoded."""

from __future__ import annotations

import tempfile
from pathlib import Path

from common.shards.members import iter_keys
from common.storage import NotFound, Store
from services.records import RecordError, Sidecar


def read_sidecars(store: Store, key: str, max_member_bytes: int | None,
                  workdir: str) -> tuple[list[tuple[str, Sidecar]], int]:
    """(segment id, sidecar) of every segment, and the number of members not one."""
    Path(workdir).mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="onsei-report-", dir=workdir) as d:
        local = Path(d) / "enhanced.tar"
        try:
            store.get_file(key, local)
        except NotFound:
            return [], 1
        out, bad = [], 0
        try:
            for item in iter_keys(local, max_member_bytes):
                if item.key is None or item.error is not None or "json" not in item.files:
                    bad += 1
                    continue
                try:
                    out.append((item.key, Sidecar.from_json(item.data("json"))))
                except RecordError:
                    bad += 1
        except Exception:  # noqa: BLE001 - a damaged tar counts as unreadable, the rest stays
            bad += 1
        return out, bad
