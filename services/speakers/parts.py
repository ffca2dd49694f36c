"""The published parts of ``onsei speakers`` (``_ledger/speakers/_parts/``): the state of the
corpus speaker index, in the store. One Parquet file per linked batch, a row per file speaker
in corpus order: its shard, its label within its file, its segments, its corpus speaker's
number and its mean embedding (the float16 values the link used); the shards the batch linked
in the file's metadata. Replayed in name order (a part's name begins with its sequence
number), they give the index (services/speakers/link.py, ``apply``). A local copy is a cache,
fetched again when it does not read.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from common.storage import Store
from common.storage.cached import read_cached
from services.speakers.embeddings import DIM

PARTS = "_ledger/speakers/_parts/"
T = TypeVar("T")


class SpeakersPartError(RuntimeError):
    """A published part (the store's copy) that cannot be read."""


@dataclass(frozen=True)
class PartInfo:
    """What a part's footer says: the shards it linked, its file speakers and segments."""

    shards: list[int]
    file_speakers: int
    segments: int


@dataclass(frozen=True)
class Part:
    shards: list[int]
    shard: np.ndarray  # per file speaker
    labels: list[str]
    segments: np.ndarray
    speaker: np.ndarray
    means: np.ndarray  # float32 rows, the float16 values stored


def part_name(seq: int, token: str) -> str:
    return f"{PARTS}part-{seq:09d}-{token}.parquet"


def _schema(shards: list[int], segments: int) -> Any:
    import pyarrow as pa

    return pa.schema([("shard", pa.int32()), ("label", pa.string()), ("segments", pa.int32()),
                      ("speaker", pa.int64()), ("mean", pa.list_(pa.float16(), DIM))],
                     metadata={b"shards": ",".join(map(str, shards)).encode(),
                               b"segments": str(segments).encode()})


def write_part(path: Path, p: Part) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path.parent.mkdir(parents=True, exist_ok=True)
    flat = p.means.astype(np.float16).reshape(-1)
    table = pa.table([pa.array(p.shard, pa.int32()), pa.array(p.labels, pa.string()),
                      pa.array(p.segments, pa.int32()), pa.array(p.speaker, pa.int64()),
                      pa.FixedSizeListArray.from_arrays(pa.array(flat, pa.float16()), DIM)],
                     schema=_schema(p.shards, int(p.segments.sum())))
    pq.write_table(table, path, compression="zstd")


def _shards(meta: dict[bytes, bytes]) -> list[int]:
    return [int(x) for x in meta.get(b"shards", b"").decode().split(",") if x]


def _info(path: Path) -> PartInfo:
    import pyarrow.parquet as pq

    pf = pq.ParquetFile(path)
    meta = pf.schema_arrow.metadata or {}
    return PartInfo(_shards(meta), pf.metadata.num_rows, int(meta.get(b"segments", b"0")))


def _read(path: Path) -> Part:
    import pyarrow.parquet as pq

    t = pq.read_table(path)
    shards = _shards(t.schema.metadata or {})
    flat = t.column("mean").combine_chunks().flatten().to_numpy(zero_copy_only=False)
    return Part(shards, t.column("shard").to_numpy(), t.column("label").to_pylist(),
                t.column("segments").to_numpy(), t.column("speaker").to_numpy(),
                np.asarray(flat, np.float32).reshape(len(t), DIM))


def read_part(store: Store, key: str, cache: Path) -> Part:
    """The part, from its local copy; a copy that does not read is fetched again, and a store's
    copy that does not read is :class:`SpeakersPartError`, naming it."""
    return _cached(store, key, cache, _read)


def part_info(store: Store, key: str, cache: Path) -> PartInfo:
    """The part's footer, the same way (a run reads every part's, the rows only to replay)."""
    return _cached(store, key, cache, _info)


def _cached(store: Store, key: str, cache: Path, read: Callable[[Path], T]) -> T:
    return read_cached(store, key, cache, read,
                       lambda why: SpeakersPartError(f"the speakers part {why}"))
