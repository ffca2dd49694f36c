"""All annotations of a batch of segments, from audio already in memory (no extra decode).

``Annotator.annotate(items)`` takes each segment's input (before restoration) and output (after)
at their own rates, resamples both to 16 kHz once, and runs the declared steps of ``steps.py``
over them in order (adding an annotator: one file and one line there): DNSMOS on both, the
speaker encoder on the restored audio, the prosody measures (speech fraction, pitch, speaking
rate, SNR: ``prosody.py``), the music score (held tones in the input's pauses: ``music.py``),
and the fidelity re-transcription on the sampled ones; DNSMOS, the speaker encoder, the
speech-fraction VAD (on a GPU: ``vad.py``) and Whisper run batched over the
items. ``seconds`` accumulates the time spent (the stage reports it).

The overlap is scored on the input, resampled from its own rate, by the pitch test
(``overlap.py``, at 8 kHz) or the trained detector ``ONSEI_QUALITY_OVERLAP_MODEL`` names
(``overlap_model.py``): from the frames already found in it where they were (``overlap_frames``:
by the rules before restoration or the re-cut, its segment's clipped to the piece), else from
its own. The batch's
:class:`Resampled` hands back what it already resampled (the restored audio at 16 kHz, the input
at 8 kHz) instead of doing it again.
"""

from __future__ import annotations

import time
from dataclasses import fields
from typing import Any

import numpy as np

from services.enhance.quality import overlap
from services.enhance.quality.campplus import CamppEncoder, label_encoder
from services.enhance.quality.dnsmos import Dnsmos
from services.enhance.quality.fidelity import FidelityChecker, whisper_loader
from services.enhance.quality.overlap import Frames
from services.enhance.quality.overlap_model import load_overlap_test
from services.enhance.quality.records import QualityRecord
from services.enhance.quality.speaker import SpeakerEncoder
from services.enhance.quality.steps import STEPS, AnnotationInput, Batch
from services.enhance.quality.vad import SpeechFraction
from services.enhance.resampled import Resampled
from services.enhance.settings import EnhanceSettings

SR = 16000
__all__ = ["AnnotationInput", "Annotator"]


class Annotator:
    def __init__(self, settings: EnhanceSettings, device: str = "cpu",
                 fidelity: FidelityChecker | None = None) -> None:
        s = settings
        self.dnsmos = Dnsmos(hop_seconds=s.quality_dnsmos_hop_seconds, device=device,
                            pieces=s.quality_dnsmos_pieces)
        self.speaker = SpeakerEncoder(device=device)
        self.device = device
        self.vad = SpeechFraction(device)
        self.fraction = s.quality_fidelity_fraction
        self.speaker_threshold = s.quality_speaker_threshold
        self.cer_threshold = s.quality_fidelity_cer
        self.fidelity = fidelity or FidelityChecker(
            loader=whisper_loader(s, s.quality_fidelity_model, device))
        self.seconds = 0.0
        self.fidelity_checked = 0
        self._settings = s
        self._overlap_test: overlap.OverlapTest | None = None
        self._label_model: CamppEncoder | None = None
        self.steps = STEPS  # the annotators, in order (steps.py)

    @property
    def overlap(self) -> overlap.OverlapTest:
        """What finds the frames where two voices overlap (loaded at first use)."""
        if self._overlap_test is None:
            self._overlap_test = load_overlap_test(self._settings, self.device)
        return self._overlap_test

    @property
    def label_model(self) -> CamppEncoder | None:
        """CAM++, when ``ONSEI_QUALITY_SPEAKER_LABEL_MODEL`` names it (loaded at first use)."""
        spec = self._settings.quality_speaker_label_model
        if spec and self._label_model is None:
            self._label_model = label_encoder(spec, self._settings, self.device)
        return self._label_model

    def load(self) -> None:
        for step in self.steps:
            step.load(self)

    def info(self) -> dict[str, str | float]:
        return {"dnsmos": "speechmos sig_bak_ovr.onnx (P.835)",
                "speaker": "resemblyzer pretrained.pt", "overlap": self.overlap.info(),
                **({} if self.label_model is None else
                   {"speaker_labels": f"resemblyzer + campplus {self.label_model.path.name}"}),
                "speaker_threshold": self.speaker_threshold,
                "fidelity_fraction": self.fraction, "fidelity_cer": self.cer_threshold}

    def annotate(self, items: list[AnnotationInput],
                 resampled: Resampled | None = None) -> list[QualityRecord]:
        """Every step of :attr:`steps` over the batch, in order; one record per item."""
        if not items:
            return []
        t0 = time.perf_counter()
        rs = resampled or Resampled()
        batch = Batch(items, [rs(it.before, it.before_rate, SR) for it in items],
                      [rs(it.after, it.after_rate, SR) for it in items], rs)
        for step in self.steps:
            step.run(self, batch)
        out = [_record(f) for f in batch.fields]
        self.seconds += time.perf_counter() - t0
        return out

    def input_overlap(self, x: np.ndarray, rate: int, rs: Resampled, size16k: int | None = None,
                      frames: Frames | None = None) -> float | None:
        """``quality.overlap`` of an input clip ``x`` at ``rate`` (None: too short to judge):
        from ``frames`` when the caller found them, else its own. ``size16k``: the clip's
        length at 16 kHz, where the caller has it resampled (else resampled here)."""
        if size16k is None:
            size16k = rs(x, rate, SR).size
        if size16k < overlap.MIN_SECONDS * SR:
            return None
        return (frames if frames is not None else self.overlap.frames(x, rate, rs)).share()


_DECLARED = frozenset(f.name for f in fields(QualityRecord)) - {"extra"}


def _record(values: dict[str, Any]) -> QualityRecord:
    """A record of what the steps set: a field the record does not declare goes to its
    ``extra`` (written into the sidecar as it is)."""
    known = {k: v for k, v in values.items() if k in _DECLARED}
    extra = {k: v for k, v in values.items() if k not in _DECLARED}
    return QualityRecord(**known, extra=extra)
