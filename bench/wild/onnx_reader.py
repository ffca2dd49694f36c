"""Just enough of the ONNX protobuf wire format to read a graph's initializers and nodes, so the
bench can take weights out of an ONNX file without the ``onnx`` package (not in the venv).

Only what torch's exporter writes is handled: ``ModelProto.graph`` (field 7), its
``initializer`` (5) and ``node`` (1) lists; a ``TensorProto``'s dims (1), data type (2), name (8)
and raw data (9) or float / int64 data (4, 7); a node's inputs (1), outputs (2), op type (4)
and tensor attributes (5 -> name 1, tensor 5). Tensors stored outside the file are not.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

_DTYPES: dict[int, Any] = {1: np.float32, 6: np.int32, 7: np.int64, 9: np.bool_,
                           10: np.float16, 11: np.float64}


@dataclass
class Graph:
    """An ONNX graph's initializers by name and its nodes in order, each as (op type, inputs,
    outputs, tensor attributes)."""
    initializers: dict[str, np.ndarray] = field(default_factory=dict)
    nodes: list[tuple[str, list[str], list[str], dict[str, np.ndarray]]] = field(
        default_factory=list)


def _varint(b: memoryview, i: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        c = b[i]
        i += 1
        value |= (c & 0x7F) << shift
        shift += 7
        if c < 0x80:
            return value, i


Field = tuple[int, int, Any]  # (number, wire type, int | bytes | (start, end) span)


def _fields(b: memoryview, lo: int, hi: int) -> Iterator[Field]:
    i = lo
    while i < hi:
        key, i = _varint(b, i)
        number, wire = key >> 3, key & 7
        if wire == 0:
            v, i = _varint(b, i)
            yield number, wire, v
        elif wire in (1, 5):
            size = 8 if wire == 1 else 4
            yield number, wire, bytes(b[i:i + size])
            i += size
        elif wire == 2:
            n, i = _varint(b, i)
            yield number, wire, (i, i + n)
            i += n
        else:
            raise ValueError(f"unsupported protobuf wire type {wire}")


def _text(b: memoryview, span: tuple[int, int]) -> str:
    return bytes(b[span[0]:span[1]]).decode()


def _ints(b: memoryview, wire: int, v: Any) -> list[int]:
    """A repeated int64 field's values, packed or not."""
    if wire == 0:
        return [v]
    out, i = [], v[0]
    while i < v[1]:
        x, i = _varint(b, i)
        out.append(x)
    return out


def _tensor(b: memoryview, lo: int, hi: int) -> tuple[str, np.ndarray]:
    dims: list[int] = []
    dtype, name, raw = 1, "", None
    floats: list[np.ndarray] = []
    int64s: list[int] = []
    for number, wire, v in _fields(b, lo, hi):
        if number == 1:
            dims += _ints(b, wire, v)
        elif number == 2:
            dtype = v
        elif number == 8:
            name = _text(b, v)
        elif number == 9:
            raw = bytes(b[v[0]:v[1]])
        elif number == 4:
            floats.append(np.frombuffer(bytes(b[v[0]:v[1]]) if wire == 2 else v, np.float32))
        elif number == 7:
            int64s += _ints(b, wire, v)
    if raw is not None:
        a = np.frombuffer(raw, _DTYPES[dtype])
    elif floats:
        a = np.concatenate(floats)
    else:
        a = np.array(int64s, np.int64)
    return name, a.reshape(dims).copy()


def _node(b: memoryview, lo: int, hi: int
          ) -> tuple[str, list[str], list[str], dict[str, np.ndarray]]:
    ins: list[str] = []
    outs: list[str] = []
    op = ""
    attrs: dict[str, np.ndarray] = {}
    for number, _, v in _fields(b, lo, hi):
        if number == 1:
            ins.append(_text(b, v))
        elif number == 2:
            outs.append(_text(b, v))
        elif number == 4:
            op = _text(b, v)
        elif number == 5:
            attr, tensor = "", None
            for n2, _, v2 in _fields(b, *v):
                if n2 == 1:
                    attr = _text(b, v2)
                elif n2 == 5:
                    tensor = _tensor(b, *v2)[1]
            if tensor is not None:
                attrs[attr] = tensor
    return op, ins, outs, attrs


def read_graph(path: Path) -> Graph:
    """The graph of the ONNX model file at ``path``."""
    b = memoryview(path.read_bytes())
    spans = [v for number, wire, v in _fields(b, 0, len(b)) if number == 7 and wire == 2]
    if not spans:
        raise ValueError(f"{path} holds no ONNX graph")
    g = Graph()
    for number, wire, v in _fields(b, *spans[0]):
        if number == 5 and wire == 2:
            name, value = _tensor(b, *v)
            g.initializers[name] = value
        elif number == 1 and wire == 2:
            g.nodes.append(_node(b, *v))
    return g
