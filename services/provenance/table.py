"""A shard's provenance table: ``provenance/<stem>.jsonl`` (asr's side output), one line
per input key whose ``.json`` member the raw shard holds: ``{"key", "source", "licence",
"owner", "date", "licence_ok"}``. Written once, by asr, from the raw shard; every later record
refers to it by what it already carries (a segment's id names its key, its corpus id its
shard), so no stage copies the fields and none can drift. A key not in the table has no
metadata: ``unknown``.

Only the ``.json`` members are read: the tar's headers are walked with seeks past the audio.
"""

from __future__ import annotations

import json
import tarfile
from collections.abc import Iterator
from pathlib import Path

from common.record import RecordError
from common.shards.tar import split_member_name
from services.provenance.record import Provenance

MAX_JSON_BYTES = 1 << 20  # a sidecar larger than this is not read (its key stays unknown)


class ProvenanceRow(Provenance):
    key: str


def read_metadata(shard: Path, max_bytes: int = MAX_JSON_BYTES) -> Iterator[ProvenanceRow]:
    """Each key's provenance from its ``.json`` member, in shard order; a member that is not a
    JSON object gives an all-unknown row (the key has a sidecar, without metadata)."""
    seen: set[str] = set()
    try:
        tar = tarfile.open(shard, "r:")  # noqa: SIM115 - closed below, errors kept apart
    except (tarfile.TarError, OSError):
        return  # asr records the shard's own error; nothing here to read
    with tar:
        for info in _members(tar):
            if not info.isfile():
                continue
            key, ext = split_member_name(info.name)
            if ext != "json" or key in seen:
                continue
            seen.add(key)
            meta = None
            if info.size <= max_bytes:
                f = tar.extractfile(info)
                try:
                    meta = json.loads(f.read()) if f is not None else None
                except ValueError:
                    meta = None
            p = Provenance.of_metadata(meta)
            yield ProvenanceRow(key=key, **p.model_dump())


def _members(tar: tarfile.TarFile) -> Iterator[tarfile.TarInfo]:
    """The members up to the first damaged header (asr names the damage on its lines)."""
    it = iter(tar)
    while True:
        try:
            info = next(it)
        except StopIteration:
            return
        except (tarfile.TarError, OSError):
            return
        yield info


def write_table(shard: Path, out: Path, max_bytes: int = MAX_JSON_BYTES) -> int:
    """The table of ``shard`` written to ``out``; returns its rows."""
    n = 0
    with open(out, "w", encoding="utf-8") as f:
        for row in read_metadata(shard, max_bytes):
            f.write(row.to_json() + "\n")
            n += 1
    return n


def parse_table(data: bytes) -> dict[str, Provenance]:
    """Key -> provenance; a malformed line is skipped (its key reads as unknown)."""
    out: dict[str, Provenance] = {}
    for line in data.splitlines():
        if not line.strip():
            continue
        try:
            row = ProvenanceRow.from_json(line)
        except RecordError:
            continue
        out[row.key] = Provenance(**row.model_dump(exclude={"key"}))
    return out
