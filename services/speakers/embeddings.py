"""The per-shard speaker embeddings file, written by the enhance stage beside its tar.

``enhanced/<stem>.speakers.parquet`` (enhance's side output ``speakers``), published whole with
the tar before the done record. One row per written segment that has both a Resemblyzer
embedding and a file speaker label (``quality.speaker_embedding``, ``speaker_id``: the voice
within its source file, services/enhance/speakers.py): its id in the shard, that label, the
voiced partials behind the embedding, and the embedding as 256 float16 (512 bytes a segment;
the sidecar's JSON holds the same numbers, inside a tar ``onsei speakers`` would otherwise
have to download whole, audio and all).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

DIM = 256  # Resemblyzer's embedding
FORMAT = "onsei-speakers-1"
META_KEY = b"onsei_speakers"


class EmbeddingsError(ValueError):
    """A speakers file that cannot be used (missing, unreadable, another format)."""


def _schema() -> Any:
    import pyarrow as pa

    return pa.schema([("id", pa.string()), ("speaker_id", pa.string()),
                      ("parts", pa.int32()), ("embedding", pa.list_(pa.float16(), DIM))],
                     metadata={META_KEY: FORMAT.encode()})


@dataclass
class EmbeddingsWriter:
    """Rows in output order; :meth:`write` makes the Parquet file (also with no rows)."""

    ids: list[str] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)
    parts: list[int] = field(default_factory=list)
    vectors: list[np.ndarray] = field(default_factory=list)

    def add(self, seg_id: str, speaker_id: str, embedding: Any, parts: int | None) -> None:
        v = np.asarray(embedding, np.float32).reshape(-1)
        if v.size != DIM:
            raise EmbeddingsError(f"{seg_id}: a {v.size}-value embedding (expected {DIM})")
        self.ids.append(seg_id)
        self.labels.append(speaker_id)
        self.parts.append(-1 if parts is None else int(parts))
        self.vectors.append(v.astype(np.float16))

    def __len__(self) -> int:
        return len(self.ids)

    def write(self, path: Path) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        path.parent.mkdir(parents=True, exist_ok=True)
        flat = (np.stack(self.vectors) if self.vectors else np.zeros((0, DIM), np.float16))
        emb = pa.FixedSizeListArray.from_arrays(pa.array(flat.reshape(-1), pa.float16()), DIM)
        table = pa.table([pa.array(self.ids, pa.string()), pa.array(self.labels, pa.string()),
                          pa.array(self.parts, pa.int32()), emb], schema=_schema())
        pq.write_table(table, path, compression="zstd")


@dataclass(frozen=True)
class ShardEmbeddings:
    """A shard's rows: ``vectors`` (n x 256, float32, unit length) in row order."""

    ids: list[str]
    labels: list[str]
    parts: np.ndarray
    vectors: np.ndarray

    def __len__(self) -> int:
        return len(self.ids)


def read_embeddings(path: Path) -> ShardEmbeddings:
    """The file's rows; :class:`EmbeddingsError` when it is not a speakers file of this format."""
    import pyarrow.parquet as pq

    try:
        pf = pq.ParquetFile(path)
        meta = pf.schema_arrow.metadata or {}
        if meta.get(META_KEY) != FORMAT.encode():
            found = meta.get(META_KEY, b"none").decode(errors="replace")
            raise EmbeddingsError(f"speakers format {found!r}, expected {FORMAT!r}")
        if pf.schema_arrow.remove_metadata() != _schema().remove_metadata():
            raise EmbeddingsError("unexpected columns")
        t = pf.read()
    except EmbeddingsError:
        raise
    except FileNotFoundError:
        raise EmbeddingsError("missing") from None
    except Exception as e:  # noqa: BLE001 - pyarrow raises many types for a damaged file
        raise EmbeddingsError(f"corrupt: {type(e).__name__}: {str(e)[:160]}") from None
    emb = t.column("embedding").combine_chunks()
    flat = emb.flatten().to_numpy(zero_copy_only=False)
    x = np.asarray(flat, np.float32).reshape(len(t), DIM)
    x /= np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-9)
    return ShardEmbeddings(t.column("id").to_pylist(), t.column("speaker_id").to_pylist(),
                           t.column("parts").to_numpy(), x)
