"""The per-shard signature file: one row per kept segment, written by the enhance stage.

``enhanced/<stem>.signatures.parquet`` beside the enhanced tar, published whole with it before
the done record (re-running the shard rewrites it). Columns: the segment's id, source key and
index, its duration, text and language, DNSMOS OVRL after restoration and the filterable quality
block as JSON (both null without the quality annotations: ``onsei dedup`` keeps, of each
recording's copies, one the filter policy passes), the LSH band keys of its text
(:mod:`services.dedup.text`) and of its audio's landmarks (:mod:`services.dedup.landmarks`),
and its acoustic fingerprint (:mod:`services.dedup.fingerprint`, uint32 little-endian per 16 ms
frame); the keys and the fingerprint share one spectrogram. The schema's metadata names the
format version: a reader refuses another one, but reads the one before (no quality column: its
segments' quality is unknown, and counts as passing).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from common.settings import Settings
from services.dedup.fingerprint import FP_VERSION, fingerprint_of, telephone_rate
from services.dedup.landmarks import AUDIO_VERSION, PHASE_STARTS, audio_key_families
from services.dedup.spectrum import Powers, numpy_powers
from services.dedup.text import TEXT_VERSION, text_keys
from services.records import Quality

_VERSIONS = f"{TEXT_VERSION}/{AUDIO_VERSION}/{FP_VERSION}"
FORMAT = f"onsei-signatures-4/{_VERSIONS}"
FORMAT_NO_QUALITY = f"onsei-signatures-3/{_VERSIONS}"  # written before the quality column
META_KEY = b"onsei_signatures"
MAX_ROWS = 1 << 20  # a segment's number in the index is shard << 20 | row


class SignatureError(ValueError):
    """A signature file that cannot be used (missing, unreadable, another format)."""


def signature_key(settings: Settings, shard_id: int) -> str:
    """Where a shard's signatures lie: the side output of the stage the corpus step reads
    (enhance's spec names it; services/dedup/step.py)."""
    from services.pipeline import PIPELINE  # loads enhance's spec only, when first asked

    step = PIPELINE.corpus_step("dedup")
    return PIPELINE.side_output_key(step.after, step.reads, settings, shard_id)


def _schema(quality: bool = True) -> Any:
    import pyarrow as pa

    last = [("quality", pa.string())] if quality else []
    return pa.schema([
        ("id", pa.string()), ("key", pa.string()), ("idx", pa.int32()),
        ("seconds", pa.float32()), ("text", pa.string()), ("language", pa.string()),
        ("ovrl", pa.float32()), ("bands", pa.list_(pa.int64())),
        ("akeys", pa.list_(pa.int64())), ("skeys", pa.list_(pa.int64())),
        ("fp", pa.binary()), *last,
    ], metadata={META_KEY: (FORMAT if quality else FORMAT_NO_QUALITY).encode()})


@dataclass
class SignatureWriter:
    """Rows in output order; :meth:`write` makes the Parquet file (also with no rows).
    ``powers``: what computes the spectrograms (:mod:`services.dedup.spectrum`: numpy, or
    torch on the enhance stage's device)."""

    rows: dict[str, list[Any]] = field(default_factory=lambda: {n: [] for n in _schema().names})
    powers: Powers = numpy_powers

    def add(self, seg_id: str, key: str, idx: int, seconds: float, text: str,
            language: str | None, ovrl: float | None, audio: np.ndarray, rate: int,
            quality: Quality | None = None, telephone: np.ndarray | None = None) -> None:
        """One segment's row; ``telephone``: ``telephone_rate(audio, rate)`` when the caller
        already has it (not resampled again)."""
        r = self.rows
        r["id"].append(seg_id)
        r["key"].append(key)
        r["idx"].append(idx)
        r["seconds"].append(seconds)
        r["text"].append(text)
        r["language"].append(language)
        r["ovrl"].append(ovrl)
        r["bands"].append(text_keys(text, language))
        x = telephone_rate(audio, rate) if telephone is None else telephone
        powers = self.powers(x, PHASE_STARTS)  # the first phase is the fingerprint's too
        akeys, skeys = audio_key_families(x, powers)
        r["akeys"].append(akeys)
        r["skeys"].append(skeys)
        r["fp"].append(fingerprint_of(powers[0]).astype("<u4").tobytes())
        r["quality"].append(None if quality is None else quality.filterable().to_json())

    def __len__(self) -> int:
        return len(self.rows["id"])

    def write(self, path: Path) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        if len(self) > MAX_ROWS:
            raise SignatureError(f"{len(self)} segments in one shard (at most {MAX_ROWS})")
        path.parent.mkdir(parents=True, exist_ok=True)
        table = pa.table(self.rows, schema=_schema())
        pq.write_table(table, path, compression="zstd")


def read_signatures(path: Path, columns: list[str] | None = None) -> Any:
    """The file as a pyarrow Table (only ``columns`` when given); :class:`SignatureError` when
    it is not a signature file of this format."""
    try:
        return _checked(path).read(columns=columns)
    except SignatureError:
        raise
    except Exception as e:  # noqa: BLE001 - pyarrow raises many types for a damaged file
        raise SignatureError(f"corrupt: {type(e).__name__}: {str(e)[:160]}") from None


def has_quality(path: Path) -> bool:
    """Whether the file has the ``quality`` column (the format before it has not)."""
    return "quality" in _checked(path).schema_arrow.names


def check_signatures(path: Path) -> int:
    """The number of rows, from the file's footer only (format, columns, row count checked);
    a damaged page further in is found by whoever reads it."""
    return int(_checked(path).metadata.num_rows)


def _checked(path: Path) -> Any:
    import pyarrow.parquet as pq

    try:
        pf = pq.ParquetFile(path)
        meta = pf.schema_arrow.metadata or {}
        known = {FORMAT.encode(): True, FORMAT_NO_QUALITY.encode(): False}
        if meta.get(META_KEY) not in known:
            found = meta.get(META_KEY, b"none").decode(errors="replace")
            raise SignatureError(f"signature format {found!r}, expected {FORMAT!r}")
        expected = _schema(known[meta[META_KEY]]).remove_metadata()
        if pf.schema_arrow.remove_metadata() != expected:
            raise SignatureError("unexpected columns")
        if pf.metadata.num_rows > MAX_ROWS:
            raise SignatureError(f"{pf.metadata.num_rows} rows (at most {MAX_ROWS})")
        return pf
    except SignatureError:
        raise
    except FileNotFoundError:
        raise SignatureError("missing") from None
    except Exception as e:  # noqa: BLE001 - pyarrow raises many types for a damaged file
        raise SignatureError(f"corrupt: {type(e).__name__}: {str(e)[:160]}") from None


class FingerprintColumn(Sequence[np.ndarray]):
    """A shard's ``fp`` column as Arrow holds it (one buffer and its offsets): a row becomes an
    array only when asked for, so a shard of 10,000 segments costs no 10,000 Python objects."""

    def __init__(self, table: Any) -> None:
        col = table.column("fp").combine_chunks()
        off = np.frombuffer(col.buffers()[1], dtype=np.int32)
        self._offsets = off[col.offset:col.offset + len(col) + 1]
        data = col.buffers()[2]
        self._data = data if data is not None else b""

    def __len__(self) -> int:
        return len(self._offsets) - 1

    def __iter__(self) -> Iterator[np.ndarray]:
        return (self[i] for i in range(len(self)))

    def __getitem__(self, row: int) -> np.ndarray:  # type: ignore[override]
        a, b = int(self._offsets[row]), int(self._offsets[row + 1])
        return np.frombuffer(self._data, dtype="<u4", count=(b - a) // 4, offset=a)


def fingerprints(table: Any) -> FingerprintColumn:
    return FingerprintColumn(table)
