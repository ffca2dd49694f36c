"""DNSMOS P.835 (SIG, BAK, OVRL) through onnxruntime, batched over the windows of many clips.

Same scoring as Microsoft's reference (and ``speechmos.dnsmos``): 9.01 s windows of 16 kHz audio
(a shorter clip is repeated until it fills one), the raw outputs mapped through the published
P.835 polynomials, averaged over a clip's windows. The reference slides its window by 1 s (a
30 s clip: 22 windows); by default (``hop_seconds=0``) we tile the clip with the fewest windows
that cover it, evenly spread (30 s: 4), which costs 5x less for the same audio scored.
Only the ``sig_bak_ovr`` model runs (the P.808 model, which needs a mel front-end, is not used).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

SR = 16000
WINDOW = int(9.01 * SR)  # the model's fixed input: 144,160 samples
# P.835 polynomial fits from the DNSMOS reference (non-personalised), highest power first.
_P_SIG = np.poly1d([-0.08397278, 1.22083953, 0.0052439])
_P_BAK = np.poly1d([-0.13166888, 1.60915514, -0.39604546])
_P_OVR = np.poly1d([-0.06766283, 1.11546468, 0.04602535])


@dataclass(frozen=True)
class MosScore:
    sig: float
    bak: float
    ovrl: float

    def as_dict(self) -> dict[str, float]:
        return {"sig": round(self.sig, 3), "bak": round(self.bak, 3), "ovrl": round(self.ovrl, 3)}


def windows(clip: np.ndarray, hop_seconds: float = 0.0) -> np.ndarray:
    """``[n, WINDOW]`` windows of a 16 kHz clip: every ``hop_seconds`` as the reference cuts
    them, or (``hop_seconds <= 0``) the fewest windows covering the clip, evenly spread."""
    x = np.clip(np.asarray(clip, np.float32), -1.0, 1.0)
    if x.size == 0:
        x = np.zeros(1, np.float32)
    if x.size < WINDOW:  # the reference appends the clip to itself until it is long enough
        return np.tile(x, -(-WINDOW // x.size))[None, :WINDOW]
    if hop_seconds > 0:
        starts = range(0, x.size - WINDOW + 1, max(1, int(hop_seconds * SR)))
    else:
        n = -(-x.size // WINDOW)
        starts = np.linspace(0, x.size - WINDOW, n).round().astype(int)
    return np.stack([x[s:s + WINDOW] for s in starts])


class Dnsmos:
    """``score([clip16k, ...]) -> [MosScore, ...]``; load once per process."""

    def __init__(self, hop_seconds: float = 0.0, batch: int = 32, device: str = "cpu",
                 threads: int = 0) -> None:
        self.hop_seconds = hop_seconds
        self.batch = max(1, batch)
        self.device = device
        self.threads = threads
        self._sess = None

    def load(self) -> None:
        if self._sess is not None:
            return
        import onnxruntime as ort

        from services.enhance.quality.weights import dnsmos_model

        providers = ["CPUExecutionProvider"]
        if self.device.startswith("cuda") and "CUDAExecutionProvider" in ort.get_available_providers():
            providers.insert(0, "CUDAExecutionProvider")
        opts = ort.SessionOptions()
        if self.threads:
            opts.intra_op_num_threads = self.threads
        self._sess = ort.InferenceSession(str(dnsmos_model()), opts, providers=providers)
        self.providers = self._sess.get_providers()

    def score(self, clips: list[np.ndarray]) -> list[MosScore]:
        if not clips:
            return []
        self.load()
        wins = [windows(c, self.hop_seconds) for c in clips]
        owner = np.concatenate([np.full(len(w), i) for i, w in enumerate(wins)])
        flat = np.concatenate(wins)
        raw = np.concatenate([self._sess.run(None, {"input_1": flat[i:i + self.batch]})[0]
                              for i in range(0, len(flat), self.batch)])
        mapped = np.stack([_P_SIG(raw[:, 0]), _P_BAK(raw[:, 1]), _P_OVR(raw[:, 2])], axis=1)
        out = []
        for i in range(len(clips)):
            sig, bak, ovr = mapped[owner == i].mean(axis=0)
            out.append(MosScore(float(sig), float(bak), float(ovr)))
        return out
