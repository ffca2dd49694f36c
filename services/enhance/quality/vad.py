"""Speech fraction of many segments at once: Silero VAD on the stage's device.

``speech_fraction`` (prosody.py) runs faster-whisper's Silero VAD (``silero_vad_v6.onnx``) in
onnxruntime, one segment at a time: about a quarter of the enhance stage's CPU budget on a GPU
node. :class:`SileroTorch` is the same network in torch, its weights read from the same ONNX
file (``onnxweights.py``: no ``onnx`` package), so on CUDA it runs on the GPU, a batch of
segments in one call; on CPU the ONNX path is kept (:class:`SpeechFraction` chooses).

The graph, as faster-whisper's batched call feeds it: each 512-sample window (32 ms at 16 kHz)
gets the previous window's last 64 samples in front (zeros for the first); the input is padded
with zeros to whole windows, and its last 64 samples are zeroed (faster-whisper's call does so
as it builds the first context: matched here, so both give the same probabilities). A window's
encoder (a reflect-padded STFT as a convolution, four conv + ReLU layers) is independent of
the others; one LSTM then runs over the windows in order, from a zero state. Segments are
padded at their end to the longest in the batch: the LSTM is causal, so a segment's own windows
see none of the padding.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from services.enhance.quality.prosody import VAD_THRESHOLD as THRESHOLD
from services.enhance.quality.prosody import VAD_WINDOW as WINDOW

if TYPE_CHECKING:
    import torch

CONTEXT = 64
HIDDEN = 128
ENCODER_ROWS = 2048  # windows per encoder call (65 s of audio): bounds its activations (~35 MB)


def onnx_path() -> Path:
    from faster_whisper.utils import get_assets_path

    return Path(get_assets_path()) / "silero_vad_v6.onnx"


def frame_padded(audio: np.ndarray) -> np.ndarray:
    """``audio`` padded with zeros to whole windows, its last ``CONTEXT`` samples zeroed (as
    faster-whisper's call does); empty audio stays empty."""
    x = np.asarray(audio, np.float32)
    x = np.pad(x, (0, (-x.size) % WINDOW))
    if x.size:
        x[-CONTEXT:] = 0.0
    return x


class SileroTorch:
    """``probs(batch [S, W * 512]) -> [S, W]`` speech probability per window."""

    def __init__(self, path: str | Path | None = None, device: str = "cpu") -> None:
        import torch

        from services.enhance.quality.onnxweights import initializers

        w = initializers(path or onnx_path())
        self.device = device

        def t(name: str) -> torch.Tensor:
            return torch.from_numpy(w[name]).to(device)

        self.basis = t("encoder.feature_extractor.forward_basis_buffer")  # [258, 1, 256]
        self.convs = [(t(f"encoder.conv_layers.{i}.weight"), t(f"encoder.conv_layers.{i}.bias"),
                       stride) for i, stride in enumerate((1, 2, 2, 1))]
        self.lstm = torch.nn.LSTM(HIDDEN, HIDDEN, batch_first=True).to(device).eval()
        # ONNX keeps the gates as input, output, forget, cell; torch as input, forget, cell, output
        order = np.concatenate([np.arange(0, 128), np.arange(256, 384), np.arange(384, 512),
                                np.arange(128, 256)])
        bias = w["onnx::LSTM_211"][0]
        param = self.lstm.get_parameter  # the LSTM's weights are set as attributes, untyped
        with torch.no_grad():
            param("weight_ih_l0").copy_(torch.from_numpy(w["onnx::LSTM_209"][0][order]))
            param("weight_hh_l0").copy_(torch.from_numpy(w["onnx::LSTM_210"][0][order]))
            param("bias_ih_l0").copy_(torch.from_numpy(bias[:512][order]))
            param("bias_hh_l0").copy_(torch.from_numpy(bias[512:][order]))
        self.out_w = t("decoder.conv1d.weight")[:, :, 0]  # [1, 128]
        self.out_b = t("decoder.conv1d.bias")

    def _encode(self, win: torch.Tensor) -> torch.Tensor:
        """``[N, 576]`` windows with their context -> ``[N, 128]``."""
        import torch
        import torch.nn.functional as F

        x = F.pad(win[:, None, :], (128, 128), mode="reflect")
        spec = F.conv1d(x, self.basis, stride=128)[:, :, 1:]  # the graph drops the first frame
        x = torch.sqrt(spec[:, :129] ** 2 + spec[:, 129:] ** 2)
        for weight, bias, stride in self.convs:
            x = torch.relu(F.conv1d(x, weight, bias, stride=stride, padding=1))
        return x[:, :, 0]

    def probs(self, batch: torch.Tensor) -> torch.Tensor:
        import torch

        with torch.inference_mode():
            s, n = batch.shape[0], batch.shape[1] // WINDOW
            win = batch.reshape(s, n, WINDOW)
            ctx = torch.cat([torch.zeros_like(win[:, :1, -CONTEXT:]), win[:, :-1, -CONTEXT:]], 1)
            flat = torch.cat([ctx, win], 2).reshape(s * n, WINDOW + CONTEXT)
            enc = torch.cat([self._encode(flat[i:i + ENCODER_ROWS])
                             for i in range(0, flat.shape[0], ENCODER_ROWS)])
            out, _ = self.lstm(enc.reshape(s, n, HIDDEN))
            logit = torch.relu(out) @ self.out_w.T + self.out_b
            return torch.sigmoid(logit[..., 0])


class SpeechFraction:
    """Share of each segment's 32 ms windows at or above 0.5 (16 kHz audio; :meth:`windows`:
    the verdict per window): the torch port on a GPU, faster-whisper's ONNX model
    (prosody.speech_windows) on the CPU. ``port=True`` takes the port on any device (the tests
    and the feed bench)."""

    def __init__(self, device: str = "cpu", port: bool | None = None) -> None:
        self.device = device
        self.port = device != "cpu" if port is None else port
        self._net: SileroTorch | None = None

    def load(self) -> None:
        if self.port and self._net is None:
            self._net = SileroTorch(device=self.device)

    def __call__(self, audios: list[np.ndarray]) -> list[float]:
        return [float(w.mean()) if w.size else 0.0 for w in self.windows(audios)]

    def windows(self, audios: list[np.ndarray]) -> list[np.ndarray]:
        """Each segment's verdict per 32 ms window (at or above 0.5), as booleans."""
        if not self.port:
            from services.enhance.quality.prosody import speech_windows

            return [speech_windows(a) for a in audios]
        self.load()
        assert self._net is not None
        framed = [frame_padded(a) for a in audios]
        counts = [x.size // WINDOW for x in framed]
        if max(counts, default=0) == 0:
            return [np.zeros(0, bool) for _ in audios]
        batch = np.zeros((len(framed), max(counts) * WINDOW), np.float32)
        for row, x in zip(batch, framed):
            row[:x.size] = x
        probs = self._probabilities(batch)
        return [p[:n] >= THRESHOLD for p, n in zip(probs, counts)]

    def _probabilities(self, batch: np.ndarray) -> np.ndarray:
        import torch

        assert self._net is not None
        x = torch.from_numpy(batch).to(self._net.device)
        return self._net.probs(x).cpu().numpy()
