"""Tensors of a TensorFlow checkpoint (a "tensor bundle"), read without TensorFlow or pickle.

Deezer's Spleeter weights ship as such a checkpoint: ``<prefix>.index`` and
``<prefix>.data-00000-of-00001``. The index is a LevelDB SSTable (uncompressed blocks, as TF
writes them) mapping each variable's name to a ``BundleEntryProto`` (dtype, shape, shard,
offset, size); the data file holds the raw little-endian tensors at those offsets. This reads
the few protobuf fields it needs by hand: TF and protobuf are heavy dependencies for 70 lines.
Only what a bundle of float32 variables in one shard needs is read; anything else is refused
with the reason, never guessed (checksums are not verified: the shapes and sizes are).
"""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np

MAGIC = 0xDB4775248B80FB57  # LevelDB table magic, the last 8 bytes of the index
FOOTER = 48  # two block handles padded to 40 bytes, then the magic
DTYPES = {1: np.dtype("<f4")}  # tensorflow DataType enum: DT_FLOAT
DATA = "data-00000-of-00001"


class BundleError(ValueError):
    """The files are not a checkpoint this reader can read: the message says why."""


def _varint(b: bytes, i: int) -> tuple[int, int]:
    out = shift = 0
    while True:
        if i >= len(b):
            raise BundleError("truncated varint")
        c = b[i]
        i += 1
        out |= (c & 0x7F) << shift
        shift += 7
        if c < 0x80:
            return out, i


def _fields(b: bytes) -> dict[int, list[int | bytes]]:
    """The fields of a protobuf message: number -> values (ints, or bytes if length-delimited)."""
    out: dict[int, list[int | bytes]] = {}
    i = 0
    while i < len(b):
        tag, i = _varint(b, i)
        kind = tag & 7
        v: int | bytes
        if kind == 0:
            v, i = _varint(b, i)
        elif kind == 2:
            n, i = _varint(b, i)
            v, i = b[i:i + n], i + n
        elif kind == 5:
            v, i = int.from_bytes(b[i:i + 4], "little"), i + 4
        elif kind == 1:
            v, i = int.from_bytes(b[i:i + 8], "little"), i + 8
        else:
            raise BundleError(f"protobuf wire type {kind} is not expected in a bundle entry")
        out.setdefault(tag >> 3, []).append(v)
    return out


def _int(f: dict[int, list[int | bytes]], n: int) -> int:
    v = f.get(n, [0])[0]
    if not isinstance(v, int):
        raise BundleError(f"field {n} is not a number")
    return v


def _block(b: bytes) -> list[tuple[bytes, bytes]]:
    """The (key, value) entries of one SSTable block (prefix-compressed keys)."""
    if len(b) < 4:
        raise BundleError("truncated block")
    restarts = struct.unpack("<I", b[-4:])[0]
    end = len(b) - 4 - 4 * restarts
    out, key, i = [], b"", 0
    while i < end:
        shared, i = _varint(b, i)
        own, i = _varint(b, i)
        size, i = _varint(b, i)
        key = key[:shared] + b[i:i + own]
        i += own
        out.append((key, b[i:i + size]))
        i += size
    return out


def _handle(b: bytes, i: int) -> tuple[int, int, int]:
    off, i = _varint(b, i)
    size, i = _varint(b, i)
    return off, size, i


def _read_block(f: bytes, off: int, size: int) -> bytes:
    if off + size + 5 > len(f):
        raise BundleError("a block lies past the end of the index")
    if f[off + size] != 0:  # the trailer's compression type: TF writes its bundles raw
        raise BundleError("compressed blocks are not supported")
    return f[off:off + size]


def entries(index: Path) -> dict[str, tuple[int, tuple[int, ...], int, int, int]]:
    """name -> (dtype enum, shape, shard id, offset, size) of each tensor in ``index``."""
    f = index.read_bytes()
    if len(f) < FOOTER or struct.unpack("<Q", f[-8:])[0] != MAGIC:
        raise BundleError(f"{index.name} is not a TensorFlow checkpoint index (no table magic)")
    foot = f[-FOOTER:]
    _, _, i = _handle(foot, 0)  # the metaindex: empty in a bundle
    io, isz, _ = _handle(foot, i)
    out = {}
    for _, h in _block(_read_block(f, io, isz)):
        off, size, _ = _handle(h, 0)
        for key, value in _block(_read_block(f, off, size)):
            if not key:  # the BundleHeaderProto: num_shards is field 1
                shards = _int(_fields(value), 1)
                if shards > 1:
                    raise BundleError(f"{shards} data shards; only one is supported")
                continue
            e = _fields(value)
            shape_msg = e.get(2, [b""])[0]
            dims = _fields(shape_msg if isinstance(shape_msg, bytes) else b"").get(2, [])
            shape = tuple(_int(_fields(d), 1) for d in dims if isinstance(d, bytes))
            out[key.decode()] = (_int(e, 1), shape, _int(e, 3), _int(e, 4), _int(e, 5))
    return out


def read_bundle(folder: Path, prefix: str = "model") -> dict[str, np.ndarray]:
    """Every tensor of the checkpoint ``folder/prefix`` (``.index`` and the one data shard)."""
    index, data = folder / f"{prefix}.index", folder / f"{prefix}.{DATA}"
    for p in (index, data):
        if not p.is_file():
            raise BundleError(f"{folder} lacks {p.name}")
    table = entries(index)
    raw = data.read_bytes()
    out = {}
    for name, (dtype, shape, shard, off, size) in table.items():
        if dtype not in DTYPES:
            if name == "global_step":  # an int64 counter TF saves alongside: not a weight
                continue
            raise BundleError(f"{name} has dtype {dtype}; only float32 (1) is supported")
        want = int(np.prod(shape, dtype=np.int64)) * DTYPES[dtype].itemsize
        if shard != 0 or size != want or off + size > len(raw):
            raise BundleError(f"{name} {shape} does not fit {data.name} (offset {off}, "
                              f"{size} bytes, file {len(raw)} bytes)")
        out[name] = np.frombuffer(raw, DTYPES[dtype], want // 4, off).reshape(shape)
    return out
