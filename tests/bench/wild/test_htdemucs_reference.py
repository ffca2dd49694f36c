"""The research-only reference's conversion: the protobuf reader reads back what torch's
exporter writes, and every constant the exporter folds maps back onto HTDemucs's parameter
(here on a small HTDemucs folded the way the released graph is; no weights are needed)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from bench.wild.htdemucs_reference import FREQ_EMB_SCALE, state_from_onnx
from bench.wild.onnx_reader import Graph, read_graph
from fixtures.protobuf import field, varint


def test_the_reader_reads_initializers_and_nodes(tmp_path: Path) -> None:
    w = np.arange(6, dtype=np.float32).reshape(2, 3)
    tensor = (field(1, varint(2) + varint(3)) + field(2, 1) + field(8, b"conv.weight")
              + field(9, w.tobytes()))
    node = (field(1, b"x") + field(1, b"conv.weight") + field(2, b"/conv/Conv_output_0")
            + field(4, b"Conv"))
    model = field(1, 8) + field(7, field(1, node) + field(5, tensor))
    path = tmp_path / "m.onnx"
    path.write_bytes(model)
    g = read_graph(path)
    assert list(g.initializers) == ["conv.weight"]
    assert np.array_equal(g.initializers["conv.weight"], w)
    assert g.nodes == [("Conv", ["x", "conv.weight"], ["/conv/Conv_output_0"], {})]


def _folded_graph(state: dict[str, np.ndarray]) -> Graph:
    """``state`` as the exporter left the released graph: names kept but for the folded
    constants, each fed to a node whose output carries its module's scope."""
    g = Graph()
    folded = iter(range(10_000))

    def fold(value: np.ndarray, op: str, out: str) -> None:
        name = f"onnx::{op}_{next(folded)}"
        g.initializers[name] = value
        g.nodes.append((op, ["/x", name], [out], {}))

    for key, v in state.items():
        parts = key.split(".")
        if ".dconv." in key and parts[5] in ("1", "4", "6"):  # GroupNorms and LayerScale
            enc, layer, idx = ".".join(parts[:2]), parts[4], parts[5]
            op = "Add" if parts[-1] == "bias" else "Mul"
            fold(v[:, None], op, f"/{enc}/dconv/layers.{layer}/layers.{layer}.{idx}/"
                                 f"{op}_output_0")
        elif ".norm_out." in key:
            op = "Add" if parts[-1] == "bias" else "Mul"
            fold(v[:, None], op, f"/crosstransformer/{parts[1]}.{parts[2]}/norm_out/{op}_output_0")
        elif parts[-2] in ("linear1", "linear2") and parts[-1] == "weight":
            fold(v.T, "MatMul", f"/crosstransformer/{parts[1]}.{parts[2]}/{parts[3]}/"
                                "MatMul_output_0")
        elif key.endswith("self_attn.in_proj_weight"):
            fold(v.T, "MatMul", f"/crosstransformer/{parts[1]}.{parts[2]}/self_attn/"
                                "MatMul_output_0")
        elif "layers." in key and "cross_attn.in_proj" in key:  # layers_t keep their names
            scope = f"/crosstransformer/{parts[1]}.{parts[2]}/cross_attn"
            d = v.shape[0] // 3
            op = "MatMul" if key.endswith("weight") else "Add"
            q, kv = (v[:d].T, v[d:].T) if op == "MatMul" else (v[:d], v[d:])
            fold(q, op, f"{scope}/{op}_output_0")
            fold(kv, op, f"{scope}/{op}_1_output_0")
        elif key == "freq_emb.embedding.weight":
            fold((v * FREQ_EMB_SCALE).T[None, :, :, None], "Expand", "/Expand_output_0")
        else:
            g.initializers[key] = v
    return g


def test_every_folded_constant_maps_back_onto_its_parameter() -> None:
    torch = pytest.importorskip("torch")
    from demucs.htdemucs import HTDemucs

    torch.manual_seed(0)
    model = HTDemucs(sources=["drums", "bass", "other", "vocals"], channels=8, t_layers=2,
                     t_heads=2, dconv_mode=3, bottom_channels=16)
    state = {k: v.numpy() for k, v in model.state_dict().items()}
    got = state_from_onnx(_folded_graph(state))
    assert sorted(got) == sorted(state)
    for k, v in state.items():
        assert np.array_equal(got[k], v), k


def test_a_constant_it_does_not_know_is_refused() -> None:
    g = Graph({"onnx::Mul_1": np.ones((4, 1), np.float32)},
              [("Mul", ["/x", "onnx::Mul_1"], ["/somewhere/new/Mul_output_0"], {})])
    with pytest.raises(ValueError, match="unmapped"):
        state_from_onnx(g)
