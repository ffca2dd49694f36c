"""One device rule for every stage: auto follows the runtime, typos fail with the setting name."""

from __future__ import annotations

import pytest

from common.models.device import ctranslate2_cuda_available, resolve_device, split_device


def test_auto_follows_the_runtime() -> None:
    assert resolve_device("auto", "X", lambda: True) == "cuda"
    assert resolve_device("", "X", lambda: False) == "cpu"


def test_explicit_devices_are_checked() -> None:
    assert resolve_device("CPU", "X", lambda: True) == "cpu"
    assert resolve_device("cuda:1", "X", lambda: False) == "cuda:1"
    with pytest.raises(ValueError, match="ONSEI_ASR_DEVICE must be auto, cpu, cuda or cuda:N"):
        resolve_device("tpu", "ONSEI_ASR_DEVICE", lambda: True)
    with pytest.raises(ValueError, match="ONSEI_TOKENIZE_DEVICE"):
        resolve_device("gpu", "ONSEI_TOKENIZE_DEVICE", lambda: True)


def test_indexed_devices_split_for_ctranslate2() -> None:
    assert split_device("cuda:1") == ("cuda", 1)
    assert split_device("cuda") == ("cuda", 0)
    assert split_device("cpu") == ("cpu", 0)


def test_the_ctranslate2_probe_answers() -> None:
    auto = resolve_device("auto", "ONSEI_ASR_DEVICE", ctranslate2_cuda_available)
    assert auto == ("cuda" if ctranslate2_cuda_available() else "cpu")
