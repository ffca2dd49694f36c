"""The dedup signature's power spectrograms in torch on the enhance stage's device (a GPU
node), where the FFTs are no part of the node's CPU budget (docs/operations.md, "Feeding the
GPU"): the same frames, window and bins as :func:`services.dedup.spectrum.numpy_powers`, in
float32, so a fingerprint bit or a landmark may differ where two values nearly tie
(tests/services/enhance/test_signature_powers.py bounds how many). Here, not in the dedup
package, because torch is the enhance stage's dependency, not the matcher's.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from services.dedup.fingerprint import FRAME, HANN, HOP


class DevicePowers:
    """:func:`numpy_powers` in torch on ``device``: one FFT call for all the phases, one copy
    of the spectrograms back."""

    def __init__(self, device: str) -> None:
        import torch

        self.device = device
        self.window = torch.from_numpy(HANN).to(device)

    def __call__(self, x: np.ndarray, starts: Sequence[int]) -> list[np.ndarray]:
        import torch

        xt = torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32)).to(self.device)
        frames = [xt[s:].unfold(0, FRAME, HOP) if x.size - s >= FRAME + HOP else None
                  for s in starts]
        rows = [0 if f is None else f.shape[0] for f in frames]
        if not sum(rows):
            return [np.zeros((0, FRAME // 2 + 1), np.float32) for _ in starts]
        spec = torch.fft.rfft(torch.cat([f for f in frames if f is not None]) * self.window,
                              dim=1)
        power = (spec.real ** 2 + spec.imag ** 2).cpu().numpy()
        return list(np.split(power, np.cumsum(rows)[:-1]))
