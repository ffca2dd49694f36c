"""w2v-BERT 2.0's filterbank (``SeamlessM4TFeatureExtractor``) vectorised in torch, batched, on
any device.

The transformers extractor loops over frames in Python (about 50 ms per 10 s row on one CPU
core): a GPU restoring hundreds of chunks per second would wait on it. This computes the same
features (Kaldi-style: int16 scale, per-frame DC removal, 0.97 pre-emphasis, Povey window,
512-point power spectrum, Kaldi mel bank, log, per-utterance mean/variance normalisation per
bin, two frames stacked), using the extractor's own window and mel matrix so the constants are
identical; tests check it against the original.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

FRAME_LENGTH = 400
HOP = 160
FFT = 512
PREEMPHASIS = 0.97
MEL_FLOOR = 1.192092955078125e-07
STRIDE = 2


class TorchFbank:
    def __init__(self, device: str = "cpu") -> None:
        import torch
        from transformers import SeamlessM4TFeatureExtractor

        ref = SeamlessM4TFeatureExtractor(padding_value=1.0)
        self.device = device
        self.mel = torch.tensor(ref.mel_filters, dtype=torch.float32, device=device)  # (257, 80)
        self.window = torch.tensor(ref.window, dtype=torch.float32, device=device)  # (400,)

    def __call__(self, rows: torch.Tensor) -> torch.Tensor:
        """``rows`` float tensor (B, N) at 16 kHz -> (B, F // 2, 160) float32, F = 1 + (N - 400) //
        160."""
        import torch

        logmel = self.log_mel(rows, 32768.0)
        mean = logmel.mean(dim=1, keepdim=True)
        var = logmel.var(dim=1, keepdim=True, unbiased=True)
        feats = (logmel - mean) / torch.sqrt(var + 1e-7)
        b, f, c = feats.shape
        f -= f % STRIDE
        return feats[:, :f].reshape(b, f // STRIDE, c * STRIDE)

    def log_mel(self, rows: torch.Tensor, scale: float = 1.0) -> torch.Tensor:
        """Kaldi's 80-band log-mel filterbank (``torchaudio.compliance.kaldi.fbank`` with no
        dither) of ``rows`` (B, N) at 16 kHz times ``scale`` -> (B, F, 80)."""
        import torch

        x = rows.to(self.device, torch.float32) * scale
        frames = x.unfold(-1, FRAME_LENGTH, HOP)  # (B, F, 400), a view
        frames = frames - frames.mean(dim=-1, keepdim=True)
        pre = torch.cat([frames[..., :1] * (1 - PREEMPHASIS),
                         frames[..., 1:] - PREEMPHASIS * frames[..., :-1]], dim=-1)
        spec = torch.fft.rfft(pre * self.window, n=FFT).abs().pow(2)  # (B, F, 257)
        logmel: torch.Tensor = torch.clamp(spec @ self.mel, min=MEL_FLOOR).log()
        return logmel
