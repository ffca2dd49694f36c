"""The enhancer backends by name (``ONSEI_ENHANCE_BACKEND``), and the one that only resamples. Each
model backend imports its model stack inside ``load()``."""

from __future__ import annotations

from typing import Any

import numpy as np

from services.enhance.backend import Backend, EnhancerUnavailable
from services.enhance.settings import EnhanceSettings


class NoneBackend(Backend):
    """Resampling only, for corpora that are already clean (decode straight at 24 kHz)."""

    name = "none"
    in_rate = out_rate = 24000

    def load(self) -> None:
        pass

    def run(self, prepared: np.ndarray) -> np.ndarray:
        return prepared

    def info(self) -> dict[str, Any]:
        return {"enhancer": "none", "enhancer_version": "resample-soxr"}


def make_backend(settings: EnhanceSettings) -> Backend:
    name = settings.enhance_backend.strip().lower()
    if name == "sidon":
        from services.enhance.sidon import SidonBackend

        return SidonBackend(settings)
    if name == "rnnoise":
        from services.enhance.denoise import RNNoiseBackend

        return RNNoiseBackend(settings)
    if name == "none":
        return NoneBackend()
    raise EnhancerUnavailable(
        f"unknown ONSEI_ENHANCE_BACKEND={settings.enhance_backend!r}: use sidon, rnnoise or none")
