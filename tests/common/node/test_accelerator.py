"""ONSEI_NODE_TYPE detected when unset (common/node/accelerator.py): a fake nvidia-smi on PATH."""

from __future__ import annotations

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

    def install(body: str) -> None:
        exe = bin_dir / "nvidia-smi"
        exe.write_text(f"#!/bin/sh\n{body}\n")
        exe.chmod(0o755)
        nodetype.detect.cache_clear()

    yield install
    nodetype.detect.cache_clear()


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
    assert (n.type, n.type_from, n.price_per_hour) == ("A10G", "nvidia-smi", PRICES["A10G"][0])
    assert n.as_record()["type_from"] == "nvidia-smi"
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
