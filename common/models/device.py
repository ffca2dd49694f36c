"""The one device rule of every stage: ``auto`` is CUDA when the stage's runtime sees a GPU,
else CPU; anything else must be ``cpu``, ``cuda`` or ``cuda:N`` (checked, so a typo fails at
model load with the setting's name, not deep inside a runtime)."""

from __future__ import annotations

import re
from collections.abc import Callable


def resolve_device(setting: str, name: str, cuda_available: Callable[[], bool],
                   indexed: bool = True) -> str:
    """``name``: the setting (``ONSEI_ASR_DEVICE``) for the message; ``indexed``: whether the
    runtime takes ``cuda:N`` (torch does; CTranslate2 takes the index apart)."""
    device = (setting or "auto").strip().lower()
    if device == "auto":
        return "cuda" if cuda_available() else "cpu"
    if device in ("cpu", "cuda") or (indexed and re.fullmatch(r"cuda:\d+", device)):
        return device
    choices = "auto, cpu, cuda" + (" or cuda:N" if indexed else "")
    raise ValueError(f"{name} must be {choices}, not {setting!r}")


def torch_cuda_available() -> bool:
    import torch  # the stages that use torch have it; imported only when asked

    return bool(torch.cuda.is_available())
