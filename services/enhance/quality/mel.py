"""Power mel spectrogram equal to ``librosa.feature.melspectrogram`` with its defaults
(Slaney mel scale and area norm, periodic Hann window, centred frames, zero padding), in torch so
that a batch of clips runs on the scorer's device. Resemblyzer was trained on exactly this.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import torch

_F_SP = 200.0 / 3  # Slaney: linear below 1 kHz, logarithmic above
_MIN_LOG_HZ = 1000.0
_MIN_LOG_MEL = _MIN_LOG_HZ / _F_SP
_LOGSTEP = np.log(6.4) / 27.0


def hz_to_mel(f: np.ndarray) -> np.ndarray:
    f = np.asarray(f, dtype=np.float64)
    mel = f / _F_SP
    log = f >= _MIN_LOG_HZ
    mel[log] = _MIN_LOG_MEL + np.log(f[log] / _MIN_LOG_HZ) / _LOGSTEP
    return mel


def mel_to_hz(m: np.ndarray) -> np.ndarray:
    m = np.asarray(m, dtype=np.float64)
    f = _F_SP * m
    log = m >= _MIN_LOG_MEL
    f[log] = _MIN_LOG_HZ * np.exp(_LOGSTEP * (m[log] - _MIN_LOG_MEL))
    return f


def mel_filterbank(sr: int, n_fft: int, n_mels: int) -> np.ndarray:
    """``[n_mels, 1 + n_fft // 2]`` triangular filters, area-normalised (librosa
    ``norm='slaney'``)."""
    fft_f = np.linspace(0, sr / 2, 1 + n_fft // 2)
    mel_f = mel_to_hz(np.linspace(hz_to_mel(np.array([0.0]))[0],
                                  hz_to_mel(np.array([sr / 2]))[0], n_mels + 2))
    fdiff = np.diff(mel_f)
    ramps = mel_f[:, None] - fft_f[None, :]
    lower = -ramps[:-2] / fdiff[:-1, None]
    upper = ramps[2:] / fdiff[1:, None]
    w = np.maximum(0, np.minimum(lower, upper))
    w *= (2.0 / (mel_f[2:] - mel_f[:-2]))[:, None]
    return w.astype(np.float32)


class MelSpec:
    """``__call__(wave [B, T]) -> [B, frames, n_mels]`` power mel, frames = 1 + T // hop."""

    def __init__(self, sr: int, n_fft: int, hop: int, n_mels: int, device: str = "cpu") -> None:
        import torch

        self.n_fft, self.hop = n_fft, hop
        self.window = torch.hann_window(n_fft, periodic=True, device=device)
        self.fb = torch.from_numpy(mel_filterbank(sr, n_fft, n_mels)).to(device)

    def __call__(self, wave: torch.Tensor) -> torch.Tensor:
        import torch

        spec = torch.stft(wave, self.n_fft, self.hop, window=self.window, center=True,
                          pad_mode="constant", return_complex=True)
        power = spec.real ** 2 + spec.imag ** 2  # [B, freq, frames]
        return torch.matmul(self.fb, power).transpose(1, 2)
