"""The enhance stage's side outputs as steps of the chain (``chain.py``): each is named as the
spec's ``side_outputs`` names it, hears of every segment that passes it, and writes its file
after the tar (``write``). The writer knows neither file; the spec places them among the steps
(``services/enhance/spec.py``).

- ``signatures``: each segment's duplicate-detection signature from its input audio
  (services/dedup/signature.py), read by ``onsei dedup``; before the labels, while the input
  is still at hand;
- ``speakers``: each labelled segment's speaker embedding (services/speakers/embeddings.py),
  read by ``onsei speakers``; after the labels.
"""

from __future__ import annotations

from abc import abstractmethod
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from services.dedup.fingerprint import RATE as TELEPHONE
from services.dedup.signature import SignatureWriter
from services.dedup.spectrum import Powers, numpy_powers
from services.enhance.chain import OUT_RATE, Item, Step
from services.speakers.embeddings import EmbeddingsWriter

if TYPE_CHECKING:
    from services.enhance.context import StepContext


class SideOutput(Step):
    @abstractmethod
    def write(self, path: Path) -> None:
        """The side output's file for the shard, at ``path``."""

    @abstractmethod
    def __len__(self) -> int:
        """Rows it holds (0: nothing to publish)."""


class Signatures(SideOutput):
    name: ClassVar[str] = "signatures"

    def __init__(self, in_rate: int, powers: Powers | None = None) -> None:
        self.in_rate = in_rate
        self.writer = SignatureWriter(powers=powers or numpy_powers)

    @classmethod
    def make(cls, ctx: StepContext) -> Signatures:
        return cls(ctx.in_rate, ctx.signature_powers)

    def run(self, batch: list[Item]) -> list[Item]:
        for it in batch:
            s, meta = it.seg.spec, it.meta
            assert meta is not None and meta.duration_seconds is not None  # the sidecar step's
            src, rate = (it.before, self.in_rate) if it.before is not None and self.in_rate \
                else (it.audio, OUT_RATE)
            # at 8 kHz, as the overlap frames took it (the same call on the same samples)
            x8 = it.rs(src, rate, TELEPHONE) if src.dtype == np.float32 else None
            ovrl = None if it.quality is None else round(float(it.quality.dnsmos_after.ovrl), 4)
            self.writer.add(it.id, s.key, s.idx, meta.duration_seconds, s.text, s.language,
                            ovrl, src, rate, quality=meta.quality, telephone=x8)
        return batch

    def write(self, path: Path) -> None:
        self.writer.write(path)

    def __len__(self) -> int:
        return len(self.writer)


class SpeakerEmbeddings(SideOutput):
    name: ClassVar[str] = "speakers"

    def __init__(self) -> None:
        self.writer = EmbeddingsWriter()

    @classmethod
    def make(cls, ctx: StepContext) -> SpeakerEmbeddings:
        return cls()

    def run(self, batch: list[Item]) -> list[Item]:
        for it in batch:
            meta = it.meta
            q = None if meta is None else meta.quality
            if meta is not None and meta.speaker_id is not None and q is not None \
                    and q.speaker_embedding:
                self.writer.add(it.id, meta.speaker_id, q.speaker_embedding, q.speaker_parts)
        return batch

    def write(self, path: Path) -> None:
        self.writer.write(path)

    def __len__(self) -> int:
        return len(self.writer)

