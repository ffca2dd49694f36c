"""DNSMOS P.835 (SIG, BAK, OVRL) through onnxruntime, over whole segments or the reference's
windows.

Same network and mapping as Microsoft's reference (and ``speechmos.dnsmos``): the raw outputs of
the ``sig_bak_ovr`` model mapped through the published P.835 polynomials, averaged over a clip's
pieces. The reference feeds 9.01 s windows every 1 s (a 30 s clip: 21 windows, each second scored
up to 9 times) and repeats a shorter clip until it fills one (a 2 s clip costs 9 s). The network
is convolutional up to a global max-pool, so it scores any length. By default
(``hop_seconds=0``) a clip gets the fewest 9.01 s windows that cover it, evenly spread (short
clips repeated as the reference does): within 0.012 OVRL of the reference on average, so
published thresholds (Emilia's 3.0) keep their meaning. ``pieces=True`` cuts each clip into the
fewest equal pieces of at most 9.01 s scored at their own length (``onnxpatch.free_length``):
every second once, 1.8x cheaper, but 0.12 OVRL from the reference on average (biased low on
short clips). ``hop_seconds > 0`` gives the reference's sliding windows. Agreement and cost:
docs/quality.md. Only ``sig_bak_ovr`` runs (the P.808 model is not used).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import torch

Runner = Callable[[np.ndarray], np.ndarray]  # [n, samples] windows -> raw [n, 3] outputs

SR = 16000
FRAME = 160  # the network's frame hop: a piece is (frames + 1) * FRAME samples
WINDOW = int(9.01 * SR)  # the reference's window: 144,160 samples, 900 frames
MIN_PIECE = SR  # a clip shorter than 1 s is repeated to 1 s (the reference repeats to 9.01 s)
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


def _prepared(clip: np.ndarray, least: int) -> np.ndarray:
    x = np.clip(np.asarray(clip, np.float32), -1.0, 1.0)
    if x.size == 0:
        x = np.zeros(1, np.float32)
    if x.size < least:  # the reference appends the clip to itself until it is long enough
        x = np.tile(x, -(-least // x.size))[:least]
    return x


def windows(clip: np.ndarray, hop_seconds: float = 0.0) -> np.ndarray:
    """``[n, WINDOW]`` windows of a 16 kHz clip: every ``hop_seconds`` as the reference cuts
    them, or (``hop_seconds <= 0``) the fewest windows covering the clip, evenly spread."""
    x = _prepared(clip, WINDOW)
    starts: range | np.ndarray
    if hop_seconds > 0:
        starts = range(0, x.size - WINDOW + 1, max(1, int(hop_seconds * SR)))
    else:
        starts = np.linspace(0, x.size - WINDOW, -(-x.size // WINDOW)).round().astype(int)
    return np.stack([x[s:s + WINDOW] for s in starts])


def pieces(clip: np.ndarray) -> list[np.ndarray]:
    """The fewest equal pieces of at most ``WINDOW`` samples covering the clip, each cut to
    whole frames (``(F + 1) * FRAME`` samples; under ``FRAME`` samples are left at the end)."""
    x = _prepared(clip, MIN_PIECE)
    n = -(-x.size // WINDOW)
    edges = np.linspace(0, x.size, n + 1).round().astype(int)
    out = []
    for a, b in pairwise(edges):
        frames = (b - a) // FRAME - 1
        out.append(x[a:a + (frames + 1) * FRAME])
    return out


class Dnsmos:
    """``score([clip16k, ...]) -> [MosScore, ...]``; load once per process.

    On CPU the wheel's ONNX file runs in onnxruntime (its length freed in memory), with
    onnxruntime's own thread count unless ``threads`` is set (one thread measured the same CPU
    time and 1.5x the wall time on two cores, docs/quality.md). On CUDA a torch port of
    the same network runs instead (weights read from the same file; equal to onnxruntime within
    1e-6 on the raw outputs, tests/services/enhance/quality/test_dnsmos.py), so the stage's GPU
    scores it without onnxruntime-gpu.
    """

    def __init__(self, hop_seconds: float = 0.0, batch: int | None = None, device: str = "cpu",
                 threads: int = 0, pieces: bool = False) -> None:
        self.hop_seconds = hop_seconds
        self.pieces = pieces
        # windows per network call: on a CPU one, the same CPU time as 16 (13.7 against 14.0 s
        # for 32 windows) while onnxruntime's arena keeps what its largest call needed: 16
        # windows grew it to 1.9 GB, one to 270 MB (docs/operations.md)
        self.batch = max(1, batch or (16 if device.startswith("cuda") else 1))
        self.device = device
        self.threads = threads
        self._run: Runner | None = None

    def load(self) -> None:
        if self._run is not None:
            return
        from services.enhance.quality.weights import dnsmos_model

        if self.device.startswith("cuda"):
            self._run = _torch_runner(_port(dnsmos_model()), self.device)
            return
        import onnxruntime as ort

        from services.enhance.quality.onnxpatch import free_length

        opts = ort.SessionOptions()
        # onnxruntime's arena keeps what its largest call needed and, as calls of different
        # lengths come, more: without it each call's buffers go back to the allocator (enhance
        # on a 60-minute member: +340 MB over a 2-minute one with it, +237 without; same scores)
        opts.enable_cpu_mem_arena = False
        if self.threads:
            opts.intra_op_num_threads = self.threads
            opts.inter_op_num_threads = 1
            opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        sess = ort.InferenceSession(free_length(dnsmos_model().read_bytes()), opts,
                                    providers=["CPUExecutionProvider"])
        self._run = lambda x: sess.run(None, {"input_1": x})[0]

    def raw(self, x: np.ndarray) -> np.ndarray:
        """The network's raw ``[n, 3]`` outputs (before the P.835 polynomials) for ``[n, samples]``
        inputs of one length, ``(F + 1) * FRAME`` samples."""
        self.load()
        run = self._run
        assert run is not None  # load() set it
        return np.concatenate([run(np.ascontiguousarray(x[i:i + self.batch]))
                               for i in range(0, len(x), self.batch)])

    def score(self, clips: list[np.ndarray]) -> list[MosScore]:
        if not clips:
            return []
        cut = [pieces(c) if self.pieces else list(windows(c, self.hop_seconds)) for c in clips]
        by_len: dict[int, list[tuple[int, np.ndarray]]] = defaultdict(list)
        for i, ps in enumerate(cut):
            for p in ps:
                by_len[p.size].append((i, p))
        sums = np.zeros((len(clips), 3))
        for group in by_len.values():  # equal lengths run batched
            raw = self.raw(np.stack([p for _, p in group]))
            mapped = np.stack([_P_SIG(raw[:, 0]), _P_BAK(raw[:, 1]), _P_OVR(raw[:, 2])], axis=1)
            np.add.at(sums, [i for i, _ in group], mapped)
        means = sums / np.array([len(ps) for ps in cut])[:, None]
        return [MosScore(*map(float, m)) for m in means]


def _torch_runner(net: torch.nn.Module, device: str) -> Runner:
    import torch

    net = net.to(device).eval()

    def run(wins: np.ndarray) -> np.ndarray:
        with torch.inference_mode():
            out: torch.Tensor = net(torch.from_numpy(wins).to(device))
            return out.float().cpu().numpy()

    return run


def _port(path: Path) -> torch.nn.Module:
    """``sig_bak_ovr.onnx`` as a torch module: 320-sample frames every 160, DFT by two 1x1
    convolutions, log10 power, seven 3x3 conv + ReLU layers with three 2x2 max-pools, a global
    max-pool and three dense layers -> raw (SIG, BAK, OVRL)."""
    import torch
    from torch import nn

    from services.enhance.quality.onnxweights import initializers

    w = {k: torch.from_numpy(v) for k, v in initializers(path).items() if v.dtype == np.float32}

    class DnsmosNet(nn.Module):
        dft_re: torch.Tensor  # buffers: the DFT's real and imaginary kernels [320, 161]
        dft_im: torch.Tensor

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
                assert conv.bias is not None  # Conv2d has one by default
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
            n, f = x.shape[0], x.shape[1] // FRAME - 1  # any length, as the freed ONNX graph
            frames = torch.cat([x[:, :f * FRAME].reshape(n, f, FRAME),
                                x[:, FRAME:(f + 1) * FRAME].reshape(n, f, FRAME)], dim=2)
            power = (frames @ self.dft_re) ** 2 + (frames @ self.dft_im) ** 2
            h = torch.log10(power.clamp_min(1e-12))[:, None]  # [n, 1, frames, 161 bins]
            for i, conv in enumerate(self.convs):
                h = torch.relu(conv(h))
                if i >= 3 and i < 6:
                    h = torch.max_pool2d(h, 2)
            h = h.amax(dim=(2, 3))
            h = torch.relu(self.dense[0](h))
            h = torch.relu(self.dense[1](h))
            raw: torch.Tensor = self.dense[2](h)
            return raw

    return DnsmosNet()
