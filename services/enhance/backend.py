"""The interface of an enhancer backend (Sidon, RNNoise, plain resampling: services/enhance/
backends.py picks one by name).

A backend maps fixed-shape rows of mono audio ``[B, window]`` at ``in_rate`` to
``[B, window * ratio]`` at ``out_rate``. The stage does cutting, packing, joining and the final
24 kHz resampling; a backend only runs its model. Heavy imports happen inside ``load()``.
"""

from __future__ import annotations

import abc
from typing import Any

import numpy as np

from common.errors import ModelUnavailable


class EnhancerUnavailable(ModelUnavailable):
    """The configured enhancer cannot be loaded; the message says what to do."""


class Backend(abc.ABC):
    name: str = ""
    in_rate: int = 16000
    out_rate: int = 48000
    hop: int = 1  # model frame in input samples: row offsets are multiples of it
    peak: float | None = None  # scale each segment to this peak before the model
    highpass_hz: float | None = None  # high-pass each segment before the model

    @property
    def ratio(self) -> int:
        return self.out_rate // self.in_rate

    @abc.abstractmethod
    def load(self) -> None:
        """Load weights (idempotent)."""

    def prepare(self, rows: np.ndarray) -> Any:
        """CPU-side work for one batch (runs on a helper thread, ahead of :meth:`run`)."""
        return rows

    @abc.abstractmethod
    def run(self, prepared: Any) -> np.ndarray:
        """The model call: returns float32 ``[B, window * ratio]``."""

    def info(self) -> dict[str, Any]:
        return {"enhancer": self.name}
