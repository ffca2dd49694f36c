"""The one device rule of every stage: ``auto`` is CUDA when the stage's runtime sees a GPU,
else CPU; anything else must be ``cpu``, ``cuda`` or ``cuda:N`` (checked, so a typo fails at
model load with the setting's name, not deep inside a runtime). The runtimes' GPU probes live
here too, each importing its runtime only when asked."""

from __future__ import annotations

import re
from collections.abc import Callable


def resolve_device(setting: str, name: str, cuda_available: Callable[[], bool]) -> str:
    """``name``: the setting (``ONSEI_ASR_DEVICE``) for the message; ``cuda_available``: the
    probe of the runtime that will run the model (:func:`torch_cuda_available`, ...)."""
    device = (setting or "auto").strip().lower()
    if device == "auto":
        return "cuda" if cuda_available() else "cpu"
    if device in ("cpu", "cuda") or re.fullmatch(r"cuda:\d+", device):
        return device
    raise ValueError(f"{name} must be auto, cpu, cuda or cuda:N, not {setting!r}")


def split_device(device: str) -> tuple[str, int]:
    """``cuda:1`` -> (``cuda``, 1): the form of runtimes that take the index apart
    (CTranslate2)."""
    kind, _, index = device.partition(":")
    return kind, int(index or 0)


def torch_cuda_available() -> bool:
    import torch

    return bool(torch.cuda.is_available())


def ctranslate2_cuda_available() -> bool:
    import ctranslate2

    try:
        return bool(ctranslate2.get_cuda_device_count() > 0)
    except Exception:  # noqa: BLE001 - a CPU-only build raises rather than answering 0
        return False
