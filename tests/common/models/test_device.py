"""One device rule for every stage: auto follows the runtime, typos fail with the setting name."""

from __future__ import annotations

import pytest

from common.models.device import resolve_device


def test_auto_follows_the_runtime() -> None:
    assert resolve_device("auto", "X", lambda: True) == "cuda"
    assert resolve_device("", "X", lambda: False) == "cpu"


def test_explicit_devices_are_checked() -> None:
    assert resolve_device("CPU", "X", lambda: True) == "cpu"
    assert resolve_device("cuda:1", "X", lambda: False) == "cuda:1"
    with pytest.raises(ValueError, match="ONSEI_ASR_DEVICE must be auto, cpu, cuda, not"):
        resolve_device("cuda:1", "ONSEI_ASR_DEVICE", lambda: True, indexed=False)
    with pytest.raises(ValueError, match="ONSEI_TOKENIZE_DEVICE"):
        resolve_device("gpu", "ONSEI_TOKENIZE_DEVICE", lambda: True)
