"""Dedup's published parts (``_ledger/dedup/_parts/``): one Parquet file of confirmed pairs per
indexed batch, the shards it indexed in its metadata. The store holds them; a local copy is a
cache, fetched again when it does not read."""

from __future__ import annotations

from pathlib import Path
from typing import Self

from common.storage import Store
from common.storage.cached import read_cached

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

    return read_cached(store, key, cache, read, lambda why: DedupPartError(f"the dedup part {why}"))


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
