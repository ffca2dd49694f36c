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
    """``score([clip16k, ...]) -> [MosScore, ...]``; load once per process.

    On CPU the wheel's ONNX file runs in onnxruntime (2.5x faster than torch there). On CUDA a
    torch port of the same network runs instead (weights read from the same file; equal to
    onnxruntime within 1e-6 on the raw outputs, tests/services/enhance/quality/test_dnsmos.py),
    so the stage's GPU scores it without onnxruntime-gpu.
    """

    def __init__(self, hop_seconds: float = 0.0, batch: int = 16, device: str = "cpu",
                 threads: int = 0) -> None:
        self.hop_seconds = hop_seconds
        self.batch = max(1, batch)
        self.device = device
        self.threads = threads
        self._run = None

    def load(self) -> None:
        if self._run is not None:
            return
        from services.enhance.quality.weights import dnsmos_model

        if self.device.startswith("cuda"):
            self._run = _torch_runner(_port(dnsmos_model()), self.device)
        else:
            import onnxruntime as ort

            opts = ort.SessionOptions()
            if self.threads:
                opts.intra_op_num_threads = self.threads
            sess = ort.InferenceSession(str(dnsmos_model()), opts,
                                        providers=["CPUExecutionProvider"])
            self._run = lambda wins: sess.run(None, {"input_1": wins})[0]

    def raw(self, wins: np.ndarray) -> np.ndarray:
        """The network's raw ``[n, 3]`` outputs (before the P.835 polynomials)."""
        self.load()
        return np.concatenate([self._run(wins[i:i + self.batch])
                               for i in range(0, len(wins), self.batch)])

    def score(self, clips: list[np.ndarray]) -> list[MosScore]:
        if not clips:
            return []
        wins = [windows(c, self.hop_seconds) for c in clips]
        owner = np.concatenate([np.full(len(w), i) for i, w in enumerate(wins)])
        raw = self.raw(np.concatenate(wins))
        mapped = np.stack([_P_SIG(raw[:, 0]), _P_BAK(raw[:, 1]), _P_OVR(raw[:, 2])], axis=1)
        out = []
        for i in range(len(clips)):
            sig, bak, ovr = mapped[owner == i].mean(axis=0)
            out.append(MosScore(float(sig), float(bak), float(ovr)))
        return out


def _torch_runner(net, device: str):
    import torch

    net = net.to(device).eval()

    def run(wins: np.ndarray) -> np.ndarray:
        with torch.inference_mode():
            return net(torch.from_numpy(wins).to(device)).float().cpu().numpy()

    return run


def _port(path):
    """``sig_bak_ovr.onnx`` as a torch module: 320-sample frames every 160, DFT by two 1x1
    convolutions, log10 power, seven 3x3 conv + ReLU layers with three 2x2 max-pools, a global
    max-pool and three dense layers -> raw (SIG, BAK, OVRL)."""
    import torch
    from torch import nn

    from services.enhance.quality.onnxweights import initializers

    w = {k: torch.from_numpy(v) for k, v in initializers(path).items() if v.dtype == np.float32}

    class DnsmosNet(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.register_buffer("dft_re", w["time2freq/stft-real/kernel:0"][:, :, 0].T.clone())
            self.register_buffer("dft_im", w["time2freq/stft-imag/kernel:0"][:, :, 0].T.clone())
            self.convs = nn.ModuleList()
            for i in range(7):
                name = "conv2d" if i == 0 else f"conv2d_{i}"
                k = w[f"{name}/kernel:0"]
                conv = nn.Conv2d(k.shape[1], k.shape[0], 3, padding=1)
                conv.weight.data.copy_(k)
                conv.bias.data.copy_(w[f"{name}/bias:0"])
                self.convs.append(conv)
            self.dense = nn.ModuleList()
            for name in ("dense", "dense_1", "dense_3"):
                k = w[f"mos_estimator_logpow/{name}/MatMul/ReadVariableOp/resource:0"]
                lin = nn.Linear(k.shape[0], k.shape[1])
                lin.weight.data.copy_(k.T)
                lin.bias.data.copy_(w[f"mos_estimator_logpow/{name}/BiasAdd/ReadVariableOp/resource:0"])
                self.dense.append(lin)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            n = x.shape[0]
            frames = torch.cat([x[:, :144000].reshape(n, 900, 160),
                                x[:, 160:].reshape(n, 900, 160)], dim=2)  # [n, 900, 320]
            power = (frames @ self.dft_re) ** 2 + (frames @ self.dft_im) ** 2
            h = torch.log10(power.clamp_min(1e-12))[:, None]  # [n, 1, 900 frames, 161 bins]
            for i, conv in enumerate(self.convs):
                h = torch.relu(conv(h))
                if i >= 3 and i < 6:
                    h = torch.max_pool2d(h, 2)
            h = h.amax(dim=(2, 3))
            h = torch.relu(self.dense[0](h))
            h = torch.relu(self.dense[1](h))
            return self.dense[2](h)

    return DnsmosNet()
