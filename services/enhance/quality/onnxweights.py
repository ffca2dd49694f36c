"""Read the weights (graph initializers) of an ONNX file without the ``onnx`` package.

An ONNX file is a protobuf ``ModelProto``; its ``graph`` (field 7) holds ``initializer``
tensors (field 5), each with ``dims`` (1), ``data_type`` (2), ``float_data`` (4), ``name`` (8)
and ``raw_data`` (9). That is all a port needs, so we walk the wire format directly.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

_DTYPES = {1: np.float32, 7: np.int64, 6: np.int32, 9: np.bool_, 10: np.float16, 11: np.float64}


def _varint(buf: bytes, i: int) -> tuple[int, int]:
    out = shift = 0
    while True:
        b = buf[i]
        i += 1
        out |= (b & 0x7F) << shift
        if b < 0x80:
            return out, i
        shift += 7


def _varints(buf: bytes) -> list[int]:
    out, j = [], 0
    while j < len(buf):
        d, j = _varint(buf, j)
        out.append(d)
    return out


# (field number, wire type, value): an int for wire type 0, bytes for the others. Which of the
# two a field holds follows from its number in the message's schema, which the callers know and
# the tuple cannot say, so the value is taken as what the caller expects.
Field = tuple[int, int, Any]


def fields(buf: bytes) -> Iterator[Field]:
    """Yield ``(field number, wire type, value)``; length-delimited values as bytes."""
    i = 0
    while i < len(buf):
        key, i = _varint(buf, i)
        num, wt = key >> 3, key & 7
        v: int | bytes
        if wt == 0:
            v, i = _varint(buf, i)
        elif wt == 1:
            v, i = buf[i:i + 8], i + 8
        elif wt == 5:
            v, i = buf[i:i + 4], i + 4
        elif wt == 2:
            n, i = _varint(buf, i)
            v, i = buf[i:i + n], i + n
        else:
            raise ValueError(f"unsupported protobuf wire type {wt}")
        yield num, wt, v


def tensor(buf: bytes) -> tuple[str, np.ndarray]:
    """Name and value of a ``TensorProto`` (float weights; small int constants as int64)."""
    dims: list[int] = []
    name, dtype, raw, floats = "", 1, None, []
    for num, wt, v in fields(buf):
        if num == 1:
            if wt == 2:  # packed
                dims += _varints(v)
            else:
                dims.append(v)
        elif num == 2:
            dtype = v
        elif num == 4:
            floats.append(np.frombuffer(v, "<f4"))
        elif num in (5, 7):  # int32_data / int64_data: packed varints
            floats.append(np.array([d - (1 << 64) if d >= 1 << 63 else d
                                    for d in _varints(v)], np.int64))
        elif num == 8:
            name = v.decode()
        elif num == 9:
            raw = v
    if raw is not None:
        arr = np.frombuffer(raw, np.dtype(_DTYPES[dtype]).newbyteorder("<"))
    else:
        arr = np.concatenate(floats) if floats else np.zeros(0, np.float32)
    return name, arr.reshape(dims).copy()


def initializers(path: str | Path) -> dict[str, np.ndarray]:
    model = Path(path).read_bytes()
    graph = next(v for num, _, v in fields(model) if num == 7)
    return dict(tensor(v) for num, _, v in fields(graph) if num == 5)
