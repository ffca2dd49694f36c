"""An ONNX graph's initializers and nodes, so the bench can take weights out of an ONNX file
without the ``onnx`` package (not in the venv), through the wire-format reader the DNSMOS
weights already use (services/enhance/quality/onnxweights.py).

Only what torch's exporter writes is handled: ``ModelProto.graph`` (field 7), its
``initializer`` (5) and ``node`` (1) lists; a node's inputs (1), outputs (2), op type (4) and
tensor attributes (5 -> name 1, tensor 5). Tensors stored outside the file are not.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from services.enhance.quality.onnxweights import fields, tensor


@dataclass
class Graph:
    """An ONNX graph's initializers by name and its nodes in order, each as (op type, inputs,
    outputs, tensor attributes)."""
    initializers: dict[str, np.ndarray] = field(default_factory=dict)
    nodes: list[tuple[str, list[str], list[str], dict[str, np.ndarray]]] = field(
        default_factory=list)


def _node(buf: bytes) -> tuple[str, list[str], list[str], dict[str, np.ndarray]]:
    ins: list[str] = []
    outs: list[str] = []
    op = ""
    attrs: dict[str, np.ndarray] = {}
    for number, _, v in fields(buf):
        if number == 1:
            ins.append(v.decode())
        elif number == 2:
            outs.append(v.decode())
        elif number == 4:
            op = v.decode()
        elif number == 5:
            attr, value = "", None
            for n2, _, v2 in fields(v):
                if n2 == 1:
                    attr = v2.decode()
                elif n2 == 5:
                    value = tensor(v2)[1]
            if value is not None:
                attrs[attr] = value
    return op, ins, outs, attrs


def read_graph(path: Path) -> Graph:
    """The graph of the ONNX model file at ``path``."""
    graphs = [v for number, wire, v in fields(path.read_bytes()) if number == 7 and wire == 2]
    if not graphs:
        raise ValueError(f"{path} holds no ONNX graph")
    g = Graph()
    for number, wire, v in fields(graphs[0]):
        if number == 5 and wire == 2:
            name, value = tensor(v)
            g.initializers[name] = value
        elif number == 1 and wire == 2:
            g.nodes.append(_node(v))
    return g
