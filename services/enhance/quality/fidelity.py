"""Restoration fidelity: re-transcribe a sample of restored segments, CER against their text.

Restoration regenerates the waveform, so it can change what is said. A deterministic sample
(hash of the segment id, so a retried shard samples the same segments) of ``fraction`` of the
segments is transcribed again from the restored 16 kHz audio with the fleet's Whisper model
(``ONSEI_ASR_MODEL``, or ``ONSEI_QUALITY_FIDELITY_MODEL``), in the segment's language, greedy,
without timestamps; the CER against the ASR text is recorded, and above ``threshold`` the
segment is flagged ``restoration_changed_text``. The CER includes Whisper's own run-to-run
variance, so the threshold is set well above a clean re-run's CER (docs/quality.md).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from services.enhance.quality.cer import cer
from services.whisper.settings import WhisperSettings


def sampled(segment_id: str, fraction: float) -> bool:
    """Whether ``segment_id`` is in the sample: stable across runs and workers."""
    if fraction >= 1.0:
        return True
    if fraction <= 0.0:
        return False
    h = int.from_bytes(hashlib.blake2b(segment_id.encode(), digest_size=8).digest(), "big")
    return h / 2**64 < fraction


@dataclass(frozen=True)
class FidelityScore:
    cer: float
    transcript: str


class FidelityChecker:
    """``check([(clip16k, text, language), ...]) -> [FidelityScore, ...]`` with a Whisper model.

    ``model`` is a ``faster_whisper.WhisperModel`` (or anything with its ``transcribe``); when
    None, ``loader()`` is called on first use, so a worker that samples nothing loads nothing.
    """

    def __init__(self, model: Any = None, loader: Callable[[], Any] | None = None,
                 beam_size: int = 1) -> None:
        self._model = model
        self._loader = loader
        self.beam_size = beam_size

    @property
    def model(self) -> Any:
        if self._model is None:
            if self._loader is None:
                raise RuntimeError("FidelityChecker needs a model or a loader")
            self._model = self._loader()
        return self._model

    def transcribe(self, clip: np.ndarray, language: str | None) -> str:
        segments, _ = self.model.transcribe(
            np.asarray(clip, np.float32), language=language, beam_size=self.beam_size,
            without_timestamps=True, condition_on_previous_text=False, vad_filter=False)
        return "".join(s.text for s in segments).strip()

    def warm(self) -> None:
        """One transcription of a second of silence: the model's working memory (CTranslate2's
        workspace, ~200 MB for Whisper base on a CPU) is then taken when the worker starts, not
        at the first sampled segment of some later member, so a worker's peak is known from
        its start and does not step up with the first long member."""
        self.transcribe(np.zeros(16_000, np.float32), "en")

    def check(self, items: list[tuple[np.ndarray, str, str | None]]) -> list[FidelityScore]:
        out = []
        for clip, text, language in items:
            hyp = self.transcribe(clip, language)
            out.append(FidelityScore(round(cer(text, hyp), 4), hyp))
        return out


def whisper_loader(settings: WhisperSettings, model_name: str = "",
                   device: str = "auto") -> Callable[[], Any]:
    """A loader for the fleet's Whisper model (or ``model_name``) on the enhance device."""

    def load() -> Any:
        from services.whisper.model import load_model

        chosen = settings.model_copy(update={"asr_model": model_name}) if model_name else settings
        return load_model(chosen, device).model

    return load
