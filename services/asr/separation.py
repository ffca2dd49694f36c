"""Music separation ahead of the decode: where a 30 s block holds music, Whisper hears the
vocals a source-separation model (Demucs or Spleeter, services/asr/separation_model.py) takes
out of it.

Under a music bed Whisper base mishears words it gets right clean (1.3-2.1x its clean WER on the
Debian game tracks of bench/wild/music.py at 10 and 5 dB); with the true speech alone it would
read about 1.1x. Training-free masks (held tones, repetition) take out too little music and
dent the speech (docs/asr.md), so a trained separator is the remedy, as in Emilia's pipeline.

The blocks are those of held-tone suppression (services/asr/music.py: ``BLOCK_SECONDS`` with
``CONTEXT_SECONDS`` either side, a short tail joined to the block before), and so is the gate:
a block is separated when a held tone sounds in at least ``gate`` of its frames (clean speech
reads 0.2-0.73, a bed 0.83-1); ``gate`` 0 separates every block. The separator then has the
last word: its vocals are decoded only where it took out at least ``min_removed`` of the
block's energy. A trained separator is itself a music detector: htdemucs takes out 0.0002-0.003
of clean speech's energy and about a tenth of speech under a bed 10 dB down, where held tones
cannot tell a bed with few held notes from speech (docs/asr.md). Other blocks pass
bit-identical, so clean files decode exactly as without it. A block is resampled to the
model's rate and channels; a Demucs model separates it normalised as demucs's own command does,
in the model's segments (``split``: memory bounded by a segment, whatever the file's length), a
Spleeter model in its own 512-frame segments (services/asr/spleeter.py); the vocals are mixed
down and resampled back to 16 kHz, the block's length to the sample. VAD and word-pause
snapping read the source; language ID and the decode read this.
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from common.errors import ModelUnavailable
from services.asr.music import held_share, treat_blocks

SR = 16000
VOCALS = "vocals"  # the source Whisper hears; a model without it is refused at load


class SeparationModelError(ModelUnavailable):
    """A separation model that cannot be loaded, whichever backend (its loaders raise it)."""
OVERLAP = 0.25  # of a model segment with the next, as demucs's command separates


class Vocals(Protocol):
    def vocals(self, x: np.ndarray) -> np.ndarray: ...


class Separator:
    """A loaded separation model on its device: :meth:`vocals` of 16 kHz mono audio."""

    def __init__(self, model: Any, device: str = "cpu") -> None:
        self.model = model.to(device)
        self.device = device
        self.rate = int(model.samplerate)
        self.channels = int(model.audio_channels)
        self.index = list(model.sources).index(VOCALS)

    def vocals(self, x: np.ndarray) -> np.ndarray:
        """The vocals of ``x`` (16 kHz mono float32), as long as ``x``."""
        import soxr
        import torch

        y = soxr.resample(np.asarray(x, np.float32), SR, self.rate).astype(np.float32)
        wav = torch.from_numpy(y)[None].expand(self.channels, -1)
        with torch.inference_mode():
            # a model that separates a block itself (Spleeter), or a Demucs bag
            own = getattr(self.model, "separate_source", None)
            if own is not None:
                v = own(wav.contiguous().to(self.device), self.index)
            else:
                from demucs.apply import apply_model

                mean, std = wav.mean(), wav.std().clamp_min(1e-8)  # the command's normalisation
                out = apply_model(self.model, ((wav - mean) / std)[None], shifts=0, split=True,
                                  overlap=OVERLAP, progress=False, device=self.device)
                v = out[0, self.index] * std + mean
        back = soxr.resample(v.mean(0).float().cpu().numpy(), self.rate, SR).astype(np.float32)
        return _fit(back, x.size)


def _fit(x: np.ndarray, n: int) -> np.ndarray:
    """``x`` cut or zero-padded to ``n`` samples (resampling rounds the length)."""
    if x.size >= n:
        return x[:n]
    return np.concatenate([x, np.zeros(n - x.size, np.float32)])


def removed_share(x: np.ndarray, vocals: np.ndarray) -> float:
    """The share of ``x``'s energy that is not in its ``vocals`` (0 for silence)."""
    x64 = x.astype(np.float64)
    energy = float(np.dot(x64, x64))
    rest = x64 - vocals
    return float(np.dot(rest, rest)) / energy if energy > 0 else 0.0


def separate(audio: np.ndarray, gate: float, separator: Vocals,
             min_removed: float = 0.0) -> tuple[np.ndarray, int]:
    """(``audio`` (16 kHz) with each block that holds music replaced by its vocals; the number
    of blocks so treated). A block is separated when its held share reaches ``gate`` (0: every
    block) and its vocals kept when the separator took out at least ``min_removed`` of it."""
    def treat(span: np.ndarray) -> np.ndarray | None:
        if gate > 0 and held_share(span) < gate:
            return None
        v = separator.vocals(span)
        return v if removed_share(span, v) >= min_removed else None

    return treat_blocks(audio, treat)
