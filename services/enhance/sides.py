"""The enhance stage's side outputs as declared steps: each is named as the spec's
``side_outputs`` names it, hears of every written segment (``written``: its sidecar, its input
audio) and of every speaker label given (``labelled``), and writes its file after the tar
(``write``). The writer calls them and knows neither file; the stage composes them from the
spec (``stage.py``).

- ``signatures``: each written segment's duplicate-detection signature from its input audio
  (services/dedup/signature.py), read by ``onsei dedup``;
- ``speakers``: each labelled segment's speaker embedding (services/speakers/embeddings.py),
  read by ``onsei speakers``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from pathlib import Path
from typing import ClassVar

import numpy as np

from services.dedup.signature import SignatureWriter
from services.dedup.spectrum import Powers, numpy_powers
from services.enhance.segments import SegmentSpec
from services.records import Sidecar
from services.speakers.embeddings import EmbeddingsWriter


class SideOutput(ABC):
    name: ClassVar[str]

    def written(self, seg_id: str, spec: SegmentSpec, meta: Sidecar, ovrl: float | None,
                src: np.ndarray, rate: int, telephone: np.ndarray | None) -> None:
        """A segment written: its sidecar, its DNSMOS OVRL after restoration (None: not
        annotated), its input audio at ``rate`` (and at 8 kHz, where it was resampled)."""

    def labelled(self, seg_id: str, speaker_id: str, meta: Sidecar) -> None:
        """A segment given its speaker label (``meta``: its sidecar, label and all)."""

    @abstractmethod
    def write(self, path: Path) -> None:
        """The side output's file for the shard, at ``path``."""

    @abstractmethod
    def __len__(self) -> int:
        """Rows it holds (0: nothing to publish)."""


class Signatures(SideOutput):
    name = "signatures"

    def __init__(self, powers: Powers | None = None) -> None:
        self.writer = SignatureWriter(powers=powers or numpy_powers)

    def written(self, seg_id: str, spec: SegmentSpec, meta: Sidecar, ovrl: float | None,
                src: np.ndarray, rate: int, telephone: np.ndarray | None) -> None:
        assert meta.duration_seconds is not None  # the writer gives every sidecar its duration
        self.writer.add(seg_id, spec.key, spec.idx, meta.duration_seconds, spec.text,
                        spec.language, ovrl, src, rate, quality=meta.quality,
                        telephone=telephone)

    def write(self, path: Path) -> None:
        self.writer.write(path)

    def __len__(self) -> int:
        return len(self.writer)


class SpeakerEmbeddings(SideOutput):
    name = "speakers"

    def __init__(self) -> None:
        self.writer = EmbeddingsWriter()

    def labelled(self, seg_id: str, speaker_id: str, meta: Sidecar) -> None:
        q = meta.quality
        if q is not None and q.speaker_embedding:
            self.writer.add(seg_id, speaker_id, q.speaker_embedding, q.speaker_parts)

    def write(self, path: Path) -> None:
        self.writer.write(path)

    def __len__(self) -> int:
        return len(self.writer)

