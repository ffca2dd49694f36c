"""The quality annotation of one segment as computed; :meth:`QualityRecord.to_record` gives
the ``quality`` block of its enhanced ``.json`` sidecar (``services.records.Quality``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from services.enhance.quality.dnsmos import MosScore
from services.enhance.quality.prosody import Prosody
from services.records import Mos, Pitch, Quality


@dataclass
class QualityRecord:
    dnsmos_before: MosScore
    dnsmos_after: MosScore
    speaker_embedding: np.ndarray  # float32 [256]
    speaker_consistency: float | None  # None: too little speech to judge
    speaker_parts: int
    multi_speaker: bool
    fidelity_cer: float | None = None  # None: not in the fidelity sample
    fidelity_text: str | None = None
    restoration_changed_text: bool | None = None
    prosody: Prosody | None = None
    music: float | None = None  # music.py; None: too short to judge
    overlap: float | None = None  # overlap.py; None: too short to judge
    speaker_embedding_campplus: np.ndarray | None = None  # float32 [192]; None: no CAM++ model
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def dnsmos_delta(self) -> MosScore:
        b, a = self.dnsmos_before, self.dnsmos_after
        return MosScore(a.sig - b.sig, a.bak - b.bak, a.ovrl - b.ovrl)

    def to_record(self) -> Quality:
        """The sidecar's ``quality`` block (``services.records.Quality``), rounded as written."""
        return Quality(
            dnsmos_before=Mos(**self.dnsmos_before.as_dict()),
            dnsmos_after=Mos(**self.dnsmos_after.as_dict()),
            dnsmos_delta=Mos(**self.dnsmos_delta.as_dict()),
            speaker_consistency=(None if self.speaker_consistency is None
                                 else round(self.speaker_consistency, 4)),
            speaker_parts=self.speaker_parts,
            multi_speaker=self.multi_speaker,
            fidelity_cer=self.fidelity_cer,
            restoration_changed_text=self.restoration_changed_text,
            speaker_embedding=[round(float(v), 4) for v in self.speaker_embedding],
            speaker_embedding_campplus=None if self.speaker_embedding_campplus is None else [
                round(float(v), 4) for v in self.speaker_embedding_campplus],
            fidelity_text=self.fidelity_text,
            **_prosody(self.prosody),
            music=None if self.music is None else round(self.music, 3),
            overlap=None if self.overlap is None else round(self.overlap, 3),
            **self.extra,
        )

    def as_dict(self) -> dict[str, Any]:
        return self.to_record().to_dict()


def _prosody(p: Prosody | None) -> dict[str, Any]:
    if p is None:
        return {}
    return {"speech_fraction": round(p.speech_fraction, 3),
            "pitch": (None if p.pitch_mean is None or p.pitch_std is None
                      else Pitch(mean=round(p.pitch_mean, 1), std=round(p.pitch_std, 1))),
            "speaking_rate": None if p.speaking_rate is None else round(p.speaking_rate, 2),
            "speaking_rate_unit": p.speaking_rate_unit,
            "snr": None if p.snr is None else round(p.snr, 1)}
