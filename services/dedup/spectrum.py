"""The signature's power spectrograms, every phase of a segment at once: :data:`Powers` is
what the signature writer is given, :func:`numpy_powers` the CPU one
(:class:`services.enhance.signature_powers.DevicePowers` is the enhance stage's, in torch on
its device at a GPU node). Both give :func:`services.dedup.fingerprint.power_of` of each phase.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from services.dedup.fingerprint import power_of

Powers = Callable[[np.ndarray, Sequence[int]], list[np.ndarray]]


def numpy_powers(x: np.ndarray, starts: Sequence[int]) -> list[np.ndarray]:
    """:func:`power_of` of 8 kHz audio from each of ``starts``."""
    return [power_of(x, s) for s in starts]
