"""DNSMOS's ONNX graph with a free input length, rewritten in memory without the ``onnx`` package.

The wheel's ``sig_bak_ovr.onnx`` takes exactly 9.01 s (144,160 samples): it cuts the input into
two 160-sample-shifted halves with ``Slice`` (end 144,000) and ``Reshape``s each to
``[-1, 900, 160]``; everything after (DFT convolutions, the conv stack, a global max-pool, dense
layers) works on any number of frames. Three small constants fix the length, so we set them to
length-free values (``Slice`` end -160, ``Reshape`` ``[0, -1, 160]``), declare the input's time
axis symbolic and drop the stored intermediate shapes. On a 9.01 s input the rewritten graph
gives the original's outputs bit for bit (tests); a clip of ``(F + 1) * 160`` samples is scored
on its own ``F`` frames, with no repetition to 9.01 s (docs/quality.md, DNSMOS).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from services.enhance.quality.onnxweights import fields, tensor

FRAME = 160
_WINDOW = 144160  # the original fixed input length
_FREE = {  # initializer -> length-free value
    "shape_tensor": [0, -1, FRAME],
    "shape_tensor1": [0, -1, FRAME],
    "input_1:01_cropping_end": [(1 << 63) - 1, -FRAME],
}
# ModelProto.graph (7) -> GraphProto.input (11) -> ValueInfoProto.type (2) -> TypeProto.tensor_type
# (1) -> shape (2) -> dim (1); GraphProto.initializer (5), GraphProto.value_info (13).
_INPUT_DIMS = [7, 11, 2, 1, 2, 1]


def _varint(n: int) -> bytes:
    n &= (1 << 64) - 1  # negative int64 as protobuf writes them: ten bytes, two's complement
    out = bytearray()
    while True:
        low, n = n & 0x7F, n >> 7
        out.append(low | 0x80 if n else low)
        if not n:
            return bytes(out)


def _encode(items: Iterable[tuple[int, int, Any]]) -> bytes:
    # values: int for wire type 0, bytes otherwise (protobuf's wire types)
    out = bytearray()
    for num, wt, v in items:
        out += _varint(num << 3 | wt)
        if wt == 0:
            out += _varint(v)
        elif wt == 2:
            out += _varint(len(v)) + v
        else:
            out += v
    return bytes(out)


def _rewrite(buf: bytes, path: list[int], fn: Callable[[bytes], bytes]) -> bytes:
    """``buf`` with ``fn`` applied to every sub-message found along the field numbers ``path``."""
    if not path:
        return fn(buf)
    return _encode((n, w, _rewrite(v, path[1:], fn) if n == path[0] and w == 2 else v)
                   for n, w, v in fields(buf))


def _free_constant(buf: bytes) -> bytes:
    name, _ = tensor(buf)
    if name not in _FREE:
        return buf
    packed = b"".join(_varint(d) for d in _FREE[name])
    return _encode((n, w, packed if n == 7 else v) for n, w, v in fields(buf))  # int64_data


def _free_dim(buf: bytes) -> bytes:
    if any(n == 1 and w == 0 and v == _WINDOW for n, w, v in fields(buf)):
        return _encode([(2, 2, b"samples")])  # dim_value 144160 -> dim_param "samples"
    return buf


def free_length(model: bytes) -> bytes:
    """The serialized model, rewritten to accept ``[N, (F + 1) * 160]`` for any ``F``."""
    found = {tensor(v)[0] for n, _, v in fields(_graph(model)) if n == 5} & set(_FREE)
    if found != set(_FREE):
        raise ValueError(f"not the DNSMOS graph we know: missing {sorted(set(_FREE) - found)}")
    model = _rewrite(model, [7], lambda g: _encode(
        (n, w, _free_constant(v) if n == 5 else v) for n, w, v in fields(g) if n != 13))
    return _rewrite(model, _INPUT_DIMS, _free_dim)


def _graph(model: bytes) -> bytes:
    return next((v for n, _, v in fields(model) if n == 7), b"")
