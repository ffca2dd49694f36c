"""Speaker embedding and single-speaker check, with Resemblyzer's weights and our own loader.

Resemblyzer's ``VoiceEncoder`` (3-layer LSTM over 40-band power mels, 256-d L2-normed output)
embeds 1.6 s partials taken 1.3 times a second; the utterance embedding is their normalised
mean. We run the same network and slicing, batched over the partials of many segments, without
its librosa/webrtcvad preprocessing: the volume is raised to -30 dBFS as it does, and instead of
cutting long silences with a VAD, partials that are mostly quiet do not take part (ASR segments
are speech already; a pause inside one must not read as another speaker).

``consistency`` is the smallest cosine similarity between the two parts of the segment on either
side of a cut, over every cut between voiced partials (each part the normalised mean of its
partials, at least two partials a side, so a segment needs about 4 s of speech to be judged).
One voice keeps it high; a turn change makes the parts at that cut disagree. (The smallest cosine
between single 1.6 s partials separates worse: single partials are noisy, docs/quality.md.) Below
the threshold, chosen on recordings with known speakers, the segment is flagged ``multi_speaker``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import torch

SR = 16000
HOP = 160  # 10 ms frames
N_FFT = 400  # 25 ms window
N_MELS = 40
PARTIAL_FRAMES = 160  # 1.6 s
RATE = 1.3  # partials per second (Resemblyzer's default)
MIN_COVERAGE = 0.75
TARGET_DBFS = -30.0
QUIET_DB = 30.0  # a frame this far below the segment's loud frames is silence
MIN_VOICED = 0.5  # a partial takes part if at least this fraction of its frames is voiced
MIN_SIDE = 2  # partials each side of a cut: one 1.6 s partial alone is too noisy to compare
WINDOW_FRAMES = 100  # 1.0 s windows for the speaker-change scan (turns.py)
WINDOW_HOP = 25  # every 0.25 s


@dataclass(frozen=True)
class SpeakerScore:
    embedding: np.ndarray  # float32 [256], L2-normed
    consistency: float | None  # min cosine between the parts either side of a cut (None: too short)
    parts: int  # voiced partials compared


def partial_slices(n_samples: int, rate: float = RATE) -> list[tuple[int, int]]:
    """Resemblyzer's ``compute_partial_slices(n, rate=1.3, min_coverage=0.75)``, in frames."""
    n_frames = int(np.ceil((n_samples + 1) / HOP))
    step = int(np.round(SR / rate / HOP))
    steps = max(1, n_frames - PARTIAL_FRAMES + step + 1)
    out = [(i, i + PARTIAL_FRAMES) for i in range(0, steps, step)]
    start, stop = out[-1][0] * HOP, out[-1][1] * HOP
    if (n_samples - start) / (stop - start) < MIN_COVERAGE and len(out) > 1:
        out.pop()
    return out


def normalize_volume(wav: np.ndarray) -> np.ndarray:
    """Raise (never lower) the level to -30 dBFS, as Resemblyzer's preprocessing does."""
    rms = float(np.sqrt(np.mean(np.square(wav, dtype=np.float64)))) if wav.size else 0.0
    if rms <= 0:
        return wav
    change = TARGET_DBFS - 20 * np.log10(rms)
    return wav if change < 0 else (wav * 10 ** (change / 20)).astype(np.float32)


def _unit(x: np.ndarray) -> np.ndarray:
    return x / max(float(np.linalg.norm(x)), 1e-9)


def consistency(partials: np.ndarray) -> float | None:
    """Min over cuts of cos(mean of partials before, mean after), two partials a side at least;
    ``None`` (not judged) below four voiced partials (about 3.9 s of speech)."""
    n = len(partials)
    margin = MIN_SIDE
    if n < 2 * margin:
        return None
    csum = np.cumsum(partials.astype(np.float64), axis=0)
    total = csum[-1]
    return float(min(_unit(csum[j - 1]) @ _unit(total - csum[j - 1])
                     for j in range(margin, n - margin + 1)))


class SpeakerEncoder:
    """``score([clip16k, ...]) -> [SpeakerScore, ...]``; load once per process."""

    def __init__(self, device: str = "cpu", batch: int = 256, rate: float = RATE) -> None:
        self.device = device
        self.rate = rate
        self.batch = batch
        self._net: torch.nn.Module | None = None

    def load(self) -> None:
        if self._net is not None:
            return
        import torch

        from services.enhance.quality.mel import MelSpec
        from services.enhance.quality.weights import resemblyzer_model

        state = torch.load(resemblyzer_model(), map_location="cpu",
                           weights_only=True)["model_state"]
        net = _VoiceEncoder()
        net.load_state_dict({k: v for k, v in state.items() if not k.startswith("similarity")})
        self._net = net.to(self.device).eval()
        self._mel = MelSpec(SR, N_FFT, HOP, N_MELS, self.device)

    def score(self, clips: list[np.ndarray]) -> list[SpeakerScore]:
        if not clips:
            return []
        import torch

        self.load()
        assert self._net is not None  # load() set it
        mels, owners, voiced = [], [], []
        with torch.inference_mode():
            for i, clip in enumerate(clips):
                slices = partial_slices(len(clip), self.rate)
                mel = self._clip_mel(clip, slices[-1][1])
                loud = _voiced_frames(mel)
                for a, b in slices:
                    mels.append(mel[a:b])
                    owners.append(i)
                    voiced.append(bool(loud[a:b].float().mean() >= MIN_VOICED))
            embeds = torch.cat([self._net(torch.stack(mels[j:j + self.batch]))
                                for j in range(0, len(mels), self.batch)]).cpu().numpy()
        owners_a, voiced_a = np.array(owners), np.array(voiced)
        out = []
        for i in range(len(clips)):
            mine = owners_a == i
            use = embeds[mine & voiced_a] if (mine & voiced_a).any() else embeds[mine]
            mean = use.mean(axis=0)
            emb = (mean / max(np.linalg.norm(mean), 1e-9)).astype(np.float32)
            n = int((mine & voiced_a).sum())
            out.append(SpeakerScore(emb, consistency(embeds[mine & voiced_a]), n))
        return out


    def _clip_mel(self, clip: np.ndarray, frames: int) -> torch.Tensor:
        """The clip's mel at -30 dBFS (raised only), zero-padded to cover ``frames`` frames."""
        import torch

        wav = normalize_volume(np.asarray(clip, np.float32))
        wav = np.pad(wav, (0, max(0, frames * HOP - wav.size)))
        return self._mel(torch.from_numpy(wav).to(self.device)[None])[0]

    def windows(self, clips: list[np.ndarray], frames: int = WINDOW_FRAMES,
                hop: int = WINDOW_HOP) -> list[Windows]:
        """Embeddings of ``frames``-long windows every ``hop`` frames over each clip (16 kHz),
        all clips' windows in one batch run, with each window's start frame and voiced share
        and the clip's frame powers (``turns.py`` looks for speaker changes in them)."""
        if not clips:
            return []
        import torch

        self.load()
        assert self._net is not None  # load() set it
        mels, owners, out = [], [], []
        with torch.inference_mode():
            for i, clip in enumerate(clips):
                n = 1 + len(clip) // HOP
                starts = np.arange(0, max(1, n - frames + 1), hop)
                span = int(starts[-1]) + frames  # the windows' frames: one unfold each
                mel = self._clip_mel(clip, span)
                share = _voiced_frames(mel).float()[:span].unfold(0, frames, hop).mean(dim=1)
                mels.append(mel[:span].unfold(0, frames, hop).transpose(1, 2))
                owners += [i] * len(starts)
                out.append((starts, share.cpu().numpy(), mel[:n].sum(dim=1).cpu().numpy()))
            every = torch.cat(mels)
            embeds = torch.cat([self._net(every[j:j + self.batch].contiguous())
                                for j in range(0, len(every), self.batch)]).cpu().numpy()
        owners_a = np.array(owners)
        return [Windows(embeds[owners_a == i], starts, share, power, frames)
                for i, (starts, share, power) in enumerate(out)]


@dataclass(frozen=True)
class Windows:
    """One clip's window embeddings (``[n, 256]``), their start frames (10 ms), voiced shares
    and the clip's per-frame mel power."""

    embeds: np.ndarray
    starts: np.ndarray
    voiced: np.ndarray
    power: np.ndarray
    frames: int


def _voiced_frames(mel: torch.Tensor) -> torch.Tensor:
    """Frames within ``QUIET_DB`` of the clip's loud frames (95th percentile of frame power)."""
    import torch

    power = mel.sum(dim=1)
    ref = torch.quantile(power, 0.95)
    return power >= ref * 10 ** (-QUIET_DB / 10)


def _VoiceEncoder() -> torch.nn.Module:
    """Resemblyzer's network: LSTM(40 -> 256, 3 layers) -> Linear(256) -> ReLU -> L2 norm."""
    import torch
    from torch import nn

    class VoiceEncoder(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lstm = nn.LSTM(N_MELS, 256, 3, batch_first=True)
            self.linear = nn.Linear(256, 256)

        def forward(self, mels: torch.Tensor) -> torch.Tensor:
            _, (hidden, _) = self.lstm(mels)
            raw = torch.relu(self.linear(hidden[-1]))
            unit: torch.Tensor = raw / raw.norm(dim=1, keepdim=True).clamp_min(1e-9)
            return unit

    return VoiceEncoder()
