"""Dedup's published parts (``_ledger/dedup/_parts/``): one Parquet file of confirmed pairs per
indexed batch, the shards it indexed in its metadata. The store holds them; a local copy is a
cache, fetched again when it does not read."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Self

from common.storage import Store

log = logging.getLogger(__name__)

PARTS = "_ledger/dedup/_parts/"


class DedupPartError(RuntimeError):
    """A published part (the store's copy) that cannot be read."""


def part_shards(store: Store, key: str, cache: Path) -> list[int]:
    """The shards a part indexed, from its local copy; a copy that does not read is fetched
    again, and a store's copy that does not read is :class:`DedupPartError`, naming it."""
    import pyarrow.parquet as pq

    def read(path: Path) -> list[int]:
        meta = pq.ParquetFile(path).schema_arrow.metadata or {}
        return [int(x) for x in meta.get(b"shards", b"").decode().split(",") if x]

    local = cache / Path(key).name
    if local.exists():
        try:
            return read(local)
        except Exception as e:  # noqa: BLE001 - pyarrow raises many types for a damaged file
            log.warning("dedup: the local copy of %s cannot be read (%s): fetched again", key,
                        type(e).__name__)
    try:
        return read(fetch_part(store, key, cache))
    except Exception as e:  # noqa: BLE001 - the same, for the store's copy
        raise DedupPartError(f"the dedup part {key} cannot be read: "
                             f"{type(e).__name__}: {str(e)[:160]}") from None


def fetch_part(store: Store, key: str, cache: Path) -> Path:
    """The store's copy of a part, replacing the local one."""
    local = cache / Path(key).name
    local.unlink(missing_ok=True)
    store.get_file(key, local)
    return local


class PartWriter:
    """The confirmed pairs of one batch, appended in chunks; the shards it indexed in the
    file's metadata (what a resuming run reads)."""

    def __init__(self, path: Path, shards: list[int]) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        path.parent.mkdir(parents=True, exist_ok=True)
        self.schema = pa.schema([("a", pa.int64()), ("b", pa.int64()), ("score", pa.float32())],
                                metadata={b"shards": ",".join(map(str, shards)).encode()})
        self._w = pq.ParquetWriter(path, self.schema)

    def write(self, edges: list[tuple[int, int, float]]) -> None:
        import pyarrow as pa

        if edges:
            a, b, s = zip(*edges)
            self._w.write_table(pa.table({"a": pa.array(a, pa.int64()),
                                          "b": pa.array(b, pa.int64()),
                                          "score": pa.array(s, pa.float32())},
                                         schema=self.schema))

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self._w.close()
