"""ONSEI_NODE_TYPE detected when unset (common/node/accelerator.py): a fake nvidia-smi on PATH."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from common.node import accelerator as nodetype
from common.node.price import PRICES, node_of


@pytest.fixture
def fake_smi(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Install a fake ``nvidia-smi`` (a shell script body) as the only one on PATH."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}/usr/bin{os.pathsep}/bin")
    nodetype.detect.cache_clear()
    nodetype.gpu_names.cache_clear()

    def install(body: str) -> None:
        exe = bin_dir / "nvidia-smi"
        exe.write_text(f"#!/bin/sh\n{body}\n")
        exe.chmod(0o755)
        nodetype.detect.cache_clear()
        nodetype.gpu_names.cache_clear()

    yield install
    nodetype.detect.cache_clear()
    nodetype.gpu_names.cache_clear()


@pytest.mark.parametrize("name,expected", [
    ("NVIDIA H100 80GB HBM3", "H100"), ("NVIDIA H200", "H200"),
    ("NVIDIA A100-SXM4-80GB", "A100-80GB"), ("NVIDIA A100-SXM4-40GB", "A100"),
    ("NVIDIA L40S", "L40S"), ("NVIDIA L4", "L4"), ("NVIDIA A10G", "A10G"), ("NVIDIA A10", "A10"),
    ("Tesla T4", "T4"), ("Tesla V100-SXM2-16GB", "V100"),
    ("NVIDIA GeForce RTX 4090", "GeForce RTX 4090"), ("NVIDIA GH200 480GB", "GH200 480GB"),
])
def test_gpu_names_map_onto_the_price_table(name: str, expected: str) -> None:
    assert nodetype.type_of_gpu(name) == expected


def test_detected_from_nvidia_smi_and_priced(fake_smi, make_settings) -> None:
    fake_smi('echo "NVIDIA A10G"; echo "NVIDIA A10G"')
    n = node_of(make_settings(node_type="", node_pricing="on-demand"))
    assert (n.type, n.type_from, n.gpus) == ("A10G", "nvidia-smi", 2)  # the two it lists
    assert n.price_per_hour == pytest.approx(2 * PRICES["A10G"][0])
    assert n.as_record()["type_from"] == "nvidia-smi" and n.as_record()["gpus"] == 2
    fake_smi('echo "NVIDIA A10G"')
    n = node_of(make_settings(node_type="L4"))  # the setting wins, nvidia-smi not asked
    assert (n.type, n.type_from) == ("L4", "setting")
    # a reader pricing old records never takes its own GPU for the one that worked
    assert node_of(make_settings(node_type=""), detect=False).type == "unknown"


@pytest.mark.parametrize("body", ["exit 9", "true", 'echo "No devices were found" >&2; exit 6'])
def test_a_failing_nvidia_smi_is_unknown(fake_smi, make_settings, body: str) -> None:
    fake_smi(body)
    n = node_of(make_settings(node_type=""))
    assert (n.type, n.type_from, n.price_per_hour) == ("unknown", "none", None)


def test_no_nvidia_smi_or_a_hung_one_never_stalls(fake_smi, make_settings, monkeypatch) -> None:
    t0 = time.monotonic()
    assert node_of(make_settings(node_type="")).type == "unknown"  # none on PATH
    assert time.monotonic() - t0 < 1.0
    monkeypatch.setattr(nodetype, "TIMEOUT_S", 0.5)
    fake_smi("exec sleep 30")
    t0 = time.monotonic()
    assert nodetype.detect() == "unknown"
    assert time.monotonic() - t0 < 5.0
    fake_smi('echo "NVIDIA L4"')
    assert nodetype.detect() == "L4"
    fake_smi("exit 1")  # asked once per process: the cached answer stands until cleared
    assert nodetype.detect.__wrapped__() == "unknown"


def _asr_done_node(s) -> dict:
    from fixtures.speechgen import make_shard
    from services.ops.runner import Runner
    from tests.dummy.stages import DummyAsr

    make_shard(Path(s.input_url) / s.shard_name(0), {"k": {"wav": b"x" * 10}})
    Runner(s, ["asr"], stage_classes={"asr": DummyAsr}).run(range(1))
    done = [p for p in (Path(s.output_url) / "_ledger").rglob("*.json") if "asr" in p.parts]
    assert len(done) == 1, done
    return json.loads(done[0].read_text())["node"]


def test_a_done_record_tells_the_gpus_this_machine_has(fake_smi, make_settings, tmp_path,
                                                       monkeypatch) -> None:
    """No nvidia-smi and no NVIDIA device: 0 GPUs (it said 1); the devices a container was
    given, or the operator's ONSEI_NODE_GPUS, otherwise."""
    dev = tmp_path / "dev"
    dev.mkdir()
    (dev / "nvidiactl").touch()  # the driver's control file is no GPU
    monkeypatch.setattr(nodetype, "DEV", dev)
    node = _asr_done_node(make_settings(node_type=""))
    assert (node["gpus"], node["type"], node["type_from"]) == (0, "unknown", "none")
    assert node_of(make_settings(node_type="cpu")).gpus == 0
    assert node_of(make_settings(node_type="", node_gpus=4)).gpus == 4
    for i in range(2):
        (dev / f"nvidia{i}").touch()
    assert node_of(make_settings(node_type="")).gpus == 2
    node = _asr_done_node(make_settings(node_type="", output_url=str(tmp_path / "out2")))
    assert node["gpus"] == 2
