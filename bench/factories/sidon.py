"""Small TorchScript pairs with Sidon's contract, saved the way Sidon ships them.

``build_small_sidon(dir)`` writes ``feature_extractor_{cpu,cuda}.pt`` + ``decoder_{cpu,cuda}.pt``:
the feature extractor takes the w2v-BERT filterbank ``(B, T', 160)`` and returns
``{"last_hidden_state": (B, T', H)}``; the decoder takes ``(B, H, T')`` and returns
``(B, 1, 960 * T')`` at 48 kHz. Random weights: for shapes, loading and plumbing, not content.

``build_small_sidon(dir, identity=True)`` writes an identity-like pair (with
``onsei_frontend.json`` selecting raw 320-sample frames as features) whose decoder upsamples
the input 3x, so a waveform goes through nearly unchanged. Like a real model it is not perfect
at a row's edges (it tapers the first and last 0.1 s) and its level differs slightly from row
to row (a small DC offset that depends on the row): what chunked streaming must hide.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import torch
from torch import nn
from torch.nn import functional as F


class _FeatureExtractor(nn.Module):
    def __init__(self, n_in: int = 160, hidden: int = 64) -> None:
        super().__init__()
        self.proj = nn.Linear(n_in, hidden)
        self.mix = nn.Linear(hidden, hidden)

    def forward(self, input_features: torch.Tensor) -> dict[str, torch.Tensor]:
        h = F.gelu(self.proj(input_features))
        return {"last_hidden_state": h + self.mix(h)}


class _Decoder(nn.Module):
    def __init__(self, hidden: int = 64) -> None:
        super().__init__()
        self.conv = nn.Conv1d(hidden, hidden, 3, padding=1)
        self.out = nn.Conv1d(hidden, 960, 1)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        y = self.out(F.gelu(self.conv(h)))  # (B, 960, T')
        b, _, t = y.shape
        return 0.3 * torch.tanh(y.transpose(1, 2).reshape(b, 1, 960 * t))


class _FramesIdentity(nn.Module):
    def forward(self, input_features: torch.Tensor) -> dict[str, torch.Tensor]:
        return {"last_hidden_state": input_features}


class _UpsampleDecoder(nn.Module):
    def __init__(self, taper: int = 4800) -> None:
        super().__init__()
        self.taper = taper

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        b, d, t = h.shape
        x = h.transpose(1, 2).reshape(b, 1, d * t)
        y = F.interpolate(x, scale_factor=3.0, mode="linear", align_corners=False)
        # A level that differs from row to row (a pseudo-random DC offset up to +-0.03).
        y = y + 0.03 * torch.sin(1000.0 * x[:, :, :320].sum(dim=2, keepdim=True))
        n = y.shape[2]
        k = min(self.taper, n // 2)
        ramp = torch.linspace(0.0, 1.0, k, dtype=y.dtype, device=y.device)
        w = torch.ones(n, dtype=y.dtype, device=y.device)
        w[:k] = ramp
        w[n - k:] = ramp.flip(0)
        return y * w


def build_small_sidon(directory: str | Path, identity: bool = False, hidden: int = 64,
                      seed: int = 0) -> Path:
    """Write a small Sidon-contract TorchScript pair into ``directory``; return it."""
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(seed)
    if identity:
        fe, dec = _FramesIdentity(), _UpsampleDecoder()
        (d / "onsei_frontend.json").write_text(json.dumps({"type": "frames"}))
    else:
        fe, dec = _FeatureExtractor(hidden=hidden), _Decoder(hidden=hidden)
    torch.jit.save(torch.jit.script(fe.eval()), str(d / "feature_extractor_cpu.pt"))
    torch.jit.save(torch.jit.script(dec.eval()), str(d / "decoder_cpu.pt"))
    # Sidon exports one pair per device; these CPU-built modules load on either.
    shutil.copyfile(d / "feature_extractor_cpu.pt", d / "feature_extractor_cuda.pt")
    shutil.copyfile(d / "decoder_cpu.pt", d / "decoder_cuda.pt")
    return d
