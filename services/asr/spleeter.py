"""Spleeter (Deezer's U-Net separator) in torch, read from Deezer's own TF checkpoint.

``ONSEI_ASR_SEPARATION_BACKEND=spleeter`` with ``ONSEI_ASR_SEPARATION_MODEL`` a folder (local,
``s3://`` prefix or hub repo) holding the checkpoint as Spleeter publishes it
(``pretrained_models/2stems``: ``model.index`` and ``model.data-00000-of-00001``), or that
``model.index`` itself. The tensors are read by services/asr/tfbundle.py (no TensorFlow, no
pickle) into our own copy of Spleeter's network (spleeter/model/functions/unet.py, MIT): per
instrument a 12-layer U-Net on the magnitude STFT at 44.1 kHz (n_fft 4096, hop 1024, the
lowest 1024 bins, stereo, 512-frame segments) giving a sigmoid mask; the instruments' masked
spectrograms make a ratio mask (exponent 2) for each, as Spleeter's estimator does. Bins above
the 1024th are zeroed (Spleeter's ``mask_extension: zeros``): at 16 kHz there is nothing there.

The model looks like a Demucs bag to services/asr/separation.py (``samplerate``,
``audio_channels``, ``sources``) and separates a block itself
(:meth:`SpleeterModel.separate_source`), so the gate, the block walk and the stage's counting
are the same for both backends.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from common.settings import Settings
from services.asr.separation import SeparationModelError
from services.asr.tfbundle import DATA, BundleError, read_bundle

RATE, N_FFT, HOP, BINS, FRAMES = 44100, 4096, 1024, 1024, 512
FILES = ["model.index", f"model.{DATA}"]
# Spleeter's configs list the instruments in this order; the checkpoint holds one U-Net each
SOURCES = {2: ["vocals", "accompaniment"], 4: ["vocals", "drums", "bass", "other"],
           5: ["vocals", "drums", "bass", "piano", "other"]}
DOWN = (16, 32, 64, 128, 256, 512)
UP = ((512, 256), (512, 128), (256, 64), (128, 32), (64, 16), (32, 1))
EPS = 1e-10  # Spleeter's, in the ratio mask


class UNet(nn.Module):
    """One instrument's mask on (batch, channels, frames, bins) magnitudes, TF's layer for
    layer: 5x5 stride-2 convolutions padded as TF's ``same`` (1 before, 2 after), skips from
    the convolutions before batch norm, transposed convolutions cropped back to ``same``."""

    def __init__(self, channels: int = 2) -> None:
        super().__init__()
        ins = (channels, *DOWN[:-1])
        self.down = nn.ModuleList(nn.Conv2d(i, o, 5, stride=2) for i, o in zip(ins, DOWN))
        self.down_bn = nn.ModuleList(_bn(o) for o in DOWN)
        self.up = nn.ModuleList(nn.ConvTranspose2d(i, o, 5, stride=2) for i, o in UP)
        self.up_bn = nn.ModuleList(_bn(o) for _, o in UP)
        self.out = nn.Conv2d(1, channels, 4, dilation=2, padding=3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        skips, h = [], x
        for conv, bn in zip(self.down, self.down_bn):
            c = conv(F.pad(h, (1, 2, 1, 2)))
            skips.append(c)
            h = F.leaky_relu(bn(c), 0.2)  # the last one's output is unused, as in Spleeter
        h = skips.pop()
        for up, bn in zip(self.up, self.up_bn):
            h = bn(F.relu(up(h)[:, :, 1:-2, 1:-2]))
            if skips:
                h = torch.cat([skips.pop(), h], 1)
        return torch.sigmoid(self.out(h))


def _bn(n: int) -> nn.BatchNorm2d:
    return nn.BatchNorm2d(n, eps=1e-3, momentum=0.01)  # Keras's defaults, as trained


class SpleeterModel(nn.Module):
    samplerate = RATE
    audio_channels = 2
    window: torch.Tensor

    def __init__(self, sources: list[str]) -> None:
        super().__init__()
        self.sources = list(sources)
        self.nets = nn.ModuleList(UNet(self.audio_channels) for _ in sources)
        self.register_buffer("window", torch.hann_window(N_FFT), persistent=False)

    def separate_source(self, wav: torch.Tensor, index: int) -> torch.Tensor:
        """Source ``index`` of ``wav`` (channels x samples at :attr:`samplerate`), as long."""
        spec = torch.stft(wav, N_FFT, HOP, window=self.window, center=True,
                          pad_mode="constant", return_complex=True)
        frames = spec.shape[-1]
        mag = spec[:, :BINS].abs().transpose(1, 2)  # channels x frames x bins
        pad = -frames % FRAMES
        segs = torch.split(F.pad(mag, (0, 0, 0, pad)), FRAMES, dim=1)
        batch = torch.stack(segs)  # segments x channels x FRAMES x bins
        est = [net(batch) * batch for net in self.nets]  # each instrument's magnitudes
        total = sum(e ** 2 for e in est) + EPS
        mask = (est[index] ** 2 + EPS / len(est)) / total
        mask = torch.cat(list(mask), dim=1)[:, :frames].transpose(1, 2)  # channels x bins x frames
        full = torch.zeros(spec.shape, dtype=mask.dtype, device=mask.device)
        full[:, :BINS] = mask
        return torch.istft(spec * full, N_FFT, HOP, window=self.window, center=True,
                           length=wav.shape[-1])


def _tf_names(i: int, n: int) -> dict[str, str]:
    """Our parameter names of instrument ``i``'s U-Net -> the TF variable names, for a
    checkpoint of ``n`` instruments: Keras numbers each layer kind across the whole graph
    (conv2d, conv2d_1, ...), instrument by instrument, 7 convolutions, 6 transposed, 12 batch
    norms each."""
    def tf(kind: str, k: int) -> str:
        return kind if k == 0 else f"{kind}_{k}"

    out = {}
    for j in range(7):
        ours = f"nets.{i}.down.{j}" if j < 6 else f"nets.{i}.out"
        out[f"{ours}.weight"] = f"{tf('conv2d', 7 * i + j)}/kernel"
        out[f"{ours}.bias"] = f"{tf('conv2d', 7 * i + j)}/bias"
    for j in range(6):
        out[f"nets.{i}.up.{j}.weight"] = f"{tf('conv2d_transpose', 6 * i + j)}/kernel"
        out[f"nets.{i}.up.{j}.bias"] = f"{tf('conv2d_transpose', 6 * i + j)}/bias"
    for j in range(12):
        ours = f"nets.{i}.down_bn.{j}" if j < 6 else f"nets.{i}.up_bn.{j - 6}"
        bn = tf("batch_normalization", 12 * i + j)
        for p, v in (("weight", "gamma"), ("bias", "beta"), ("running_mean", "moving_mean"),
                     ("running_var", "moving_variance")):
            out[f"{ours}.{p}"] = f"{bn}/{v}"
    return out


def from_tensors(tensors: dict[str, np.ndarray], hint: Callable[[str], str]) -> SpleeterModel:
    """The model whose weights are ``tensors`` (a Spleeter checkpoint's variables)."""
    n = sum(1 for k in tensors if k.startswith("conv2d") and k.endswith("/kernel")
            and not k.startswith("conv2d_transpose"))
    if n % 7 or n // 7 not in SOURCES:
        raise SeparationModelError(hint(f"it holds {n} convolution kernels, not 7 per "
                                        f"instrument of a {'/'.join(map(str, SOURCES))}stems "
                                        "Spleeter model"))
    model = SpleeterModel(SOURCES[n // 7])
    state = model.state_dict()
    for i in range(n // 7):
        for ours, theirs in _tf_names(i, n // 7).items():
            if theirs not in tensors:
                raise SeparationModelError(hint(f"it lacks the variable {theirs}"))
            t = tensors[theirs]
            if t.ndim == 4:  # TF kernels are (h, w, in, out); transposed ones (h, w, out, in)
                t = t.transpose(3, 2, 0, 1)
            want = tuple(state[ours].shape)
            if tuple(t.shape) != want:
                tf_want = tuple(want[k] for k in (2, 3, 1, 0)) if len(want) == 4 else want
                raise SeparationModelError(hint(
                    f"{theirs} has shape {tuple(tensors[theirs].shape)}, where Spleeter's "
                    f"U-Net has {tf_want}"))
            state[ours] = torch.from_numpy(np.array(t, np.float32))  # a copy: bundle is read-only
    model.load_state_dict(state)
    return model.requires_grad_(False).eval()  # inference only


def _hint(spec: str) -> Callable[[str], str]:
    from common.models.weights import load_hint

    return load_hint("Spleeter model", spec,
                     "With ONSEI_ASR_SEPARATION_BACKEND=spleeter, ONSEI_ASR_SEPARATION_MODEL is "
                     "a folder (local, s3:// prefix or hub repo) holding Spleeter's TF "
                     f"checkpoint, {' and '.join(FILES)} (as in Spleeter's "
                     "pretrained_models/2stems), or that model.index")


def load_spleeter(spec: str, settings: Settings) -> SpleeterModel:
    """The Spleeter checkpoint at ``spec``, checked whole before a shard is taken."""
    from common.models.weights import WeightsUnavailable, local_file, resolve_model_dir

    hint = _hint(spec)
    try:
        local = local_file(spec, hint)
        folder = local.parent if local else resolve_model_dir(spec, FILES, settings, hint)
    except WeightsUnavailable as e:
        raise SeparationModelError(str(e)) from e
    if local and local.name != FILES[0]:
        raise SeparationModelError(hint(f"{local.name} is not {FILES[0]}"))
    try:
        tensors: dict[str, Any] = read_bundle(folder)
    except (BundleError, OSError) as e:
        raise SeparationModelError(hint(str(e))) from e
    return from_tensors(tensors, hint)
