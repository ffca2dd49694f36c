"""Sidon speech restoration (``sarulab-speech/sidon-v0.1``): a TorchScript pair, 16 kHz -> 48 kHz.

``h = feature_extractor(input_features)["last_hidden_state"]`` (B, T', 1024);
``wav = decoder(h.transpose(1, 2))`` (B, 1, 960 * T'). The front-end is w2v-BERT 2.0's filterbank,
``SeamlessM4TFeatureExtractor(padding_value=1.0)``, built offline. A row of ``W`` samples (a
multiple of 320) is padded by 160 samples each side, as the reference does, which gives exactly
``W / 320`` feature frames and ``3 * W`` output samples aligned with the input.

A model directory may hold ``onsei_frontend.json`` = ``{"type": "frames"}``: the front-end then
passes raw 320-sample frames (B, T', 320) instead of the filterbank. Only the test models use it
(an identity-like pair can reproduce a waveform, a filterbank cannot be inverted); Sidon's own
directory has no such file.
"""

from __future__ import annotations

import json
import logging
import threading
from pathlib import Path
from typing import Any

import numpy as np

from common.models.device import resolve_device, torch_cuda_available
from common.models.weights import WeightsUnavailable, resolve_model_dir
from services.enhance.backend import Backend, EnhancerUnavailable
from services.enhance.settings import EnhanceSettings

log = logging.getLogger(__name__)

FRAME = 320  # 20 ms at 16 kHz: one feature frame
EDGE = 160  # reference padding on each side of a chunk
FRONTEND_FILE = "onsei_frontend.json"


def sidon_files(device: str) -> list[str]:
    dev = "cuda" if device.startswith("cuda") else "cpu"
    return [f"feature_extractor_{dev}.pt", f"decoder_{dev}.pt"]


def _hint(reason: str) -> str:
    return (f"Sidon weights unavailable ({reason}). Set ONSEI_ENHANCE_SIDON_MODEL to a directory "
            "or an s3:// prefix holding feature_extractor_{cuda,cpu}.pt and decoder_{cuda,cpu}.pt "
            "(see docs/enhance.md; `onsei models fetch` where the hub is reachable), or use "
            "the offline denoiser ONSEI_ENHANCE_BACKEND=rnnoise, or ONSEI_ENHANCE_BACKEND=none.")


class SidonBackend(Backend):
    name = "sidon"
    in_rate = 16000
    out_rate = 48000
    hop = FRAME
    peak = 0.9  # the reference demo's input scaling
    highpass_hz = 50.0

    def __init__(self, settings: EnhanceSettings) -> None:
        self.settings = settings
        self._lock = threading.Lock()
        self._fe: Any = None
        self._decoder: Any = None
        self._frontend: Any = None
        self._frontend_type = "fbank"
        self.device = "cpu"
        self.model_dir: Path | None = None

    def load(self) -> None:
        with self._lock:
            if self._decoder is not None:
                return
            import torch

            self.device = resolve_device(self.settings.enhance_device, "ONSEI_ENHANCE_DEVICE",
                                         torch_cuda_available)
            files = sidon_files(self.device)
            try:
                d = resolve_model_dir(self.settings.enhance_sidon_model, files, self.settings,
                                      _hint)
            except WeightsUnavailable as e:
                raise EnhancerUnavailable(str(e)) from e
            if self.device.startswith("cuda"):  # TF32 matmuls: Hopper/Ampere speed, fp32 weights
                torch.backends.cuda.matmul.allow_tf32 = True
                torch.backends.cudnn.allow_tf32 = True
            fe = torch.jit.load(str(d / files[0]), map_location=self.device).eval()
            dec = torch.jit.load(str(d / files[1]), map_location=self.device).eval()
            cfg = d / FRONTEND_FILE
            self._frontend_type = json.loads(cfg.read_text())["type"] if cfg.is_file() else "fbank"
            if self._frontend_type == "fbank" and self.settings.enhance_frontend == "transformers":
                from transformers import SeamlessM4TFeatureExtractor

                # Every other default already matches w2v-BERT 2.0's preprocessor config.
                self._frontend = SeamlessM4TFeatureExtractor(padding_value=1.0)
                self._frontend_type = "fbank-transformers"
            elif self._frontend_type == "fbank":
                from services.enhance.fbank import TorchFbank

                self._frontend = TorchFbank(self.device)  # same features, batched, on device
            elif self._frontend_type != "frames":
                raise EnhancerUnavailable(f"{cfg}: unknown front-end {self._frontend_type!r}")
            self.model_dir = d
            self._fe, self._decoder = fe, dec
            log.info("sidon loaded from %s on %s (front-end %s)", d, self.device,
                     self._frontend_type)

    def features(self, rows: np.ndarray) -> Any:
        """[B, W] 16 kHz -> [B, W / 320, D] float32 tensor (D = 160 filterbank, or 320 raw
        frames), on the model's device."""
        return self._features(self.prepare(rows))

    def prepare(self, rows: np.ndarray) -> Any:
        """Helper-thread work: the CPU front-ends run here; for the device filterbank only the
        padded rows are staged (pinned) and the features are computed in :meth:`run`."""
        import torch

        b, w = rows.shape
        if w % FRAME:
            raise ValueError(f"row length {w} is not a multiple of {FRAME}")
        if self._frontend_type == "frames":
            return torch.from_numpy(np.ascontiguousarray(rows.reshape(b, w // FRAME, FRAME)))
        padded = np.pad(rows, ((0, 0), (EDGE, EDGE)))
        if self._frontend_type == "fbank-transformers":
            out = self._frontend(list(padded), sampling_rate=16000, return_tensors="np",
                                 return_attention_mask=False)["input_features"]
            return torch.from_numpy(out.astype(np.float32, copy=False))
        x = torch.from_numpy(padded)
        if self.device.startswith("cuda"):
            return ("rows", x.pin_memory())
        return self._frontend(x)  # CPU: torch releases the GIL, this overlaps the model

    def _features(self, prepared: Any) -> Any:
        if isinstance(prepared, tuple):  # staged rows: the filterbank on the device
            return self._frontend(prepared[1].to(self.device, non_blocking=True))
        return prepared.to(self.device, non_blocking=True)

    def run(self, prepared: Any) -> np.ndarray:
        import torch

        try:
            return self._run(prepared)
        except torch.cuda.OutOfMemoryError:
            # A GPU shared with other processes (MPS) can run short: halve the batch, not fail.
            n = (prepared[1] if isinstance(prepared, tuple) else prepared).shape[0]
            if n <= 1:
                raise
            if torch.cuda.is_available():
                torch.cuda.empty_cache()
            log.warning("sidon: out of GPU memory at batch %d, running halves", n)
            halves = [_slice(prepared, 0, n // 2), _slice(prepared, n // 2, n)]
            return np.concatenate([self.run(h) for h in halves])

    def _run(self, prepared: Any) -> np.ndarray:
        import torch

        with torch.inference_mode():
            x = self._features(prepared)
            b, t, _ = x.shape
            h = self._fe(x)["last_hidden_state"]
            wav = self._decoder(h.transpose(1, 2))
            out: np.ndarray = wav.reshape(b, -1).float().cpu().numpy()
        n = t * FRAME * self.ratio
        if out.shape[1] != n:  # "~960 * T'": fit to the exact length (row ends are context)
            out = out[:, :n] if out.shape[1] > n else np.pad(out, ((0, 0), (0, n - out.shape[1])))
        return out

    def info(self) -> dict[str, Any]:
        return {"enhancer": "sidon", "enhancer_version": self.settings.enhance_sidon_model,
                "enhancer_device": self.device}


def _slice(prepared: Any, a: int, b: int) -> Any:
    if isinstance(prepared, tuple):
        return (prepared[0], prepared[1][a:b])
    return prepared[a:b]
