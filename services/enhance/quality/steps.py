"""The annotators of a batch as declared steps: each has a ``name``, the ``fields`` of the
quality record it adds, ``load`` (its model, on the annotator) and ``run`` (the batch's items at
once). :data:`STEPS` lists them in the order they run; a step may read what an earlier one left
in ``Batch.shared`` (the speech windows the VAD step finds: prosody reads them).

Adding an annotator is one file holding its step and one line in :data:`STEPS`: a field the
quality record does not declare is written into the sidecar's ``quality`` block as it is
(``QualityRecord.extra``), kept by every reader (services/records.py).

A step reads its model off the :class:`~services.enhance.quality.annotate.Annotator` at run
time, so what replaces a model there (a fake in a bench, a port on a GPU node) is what runs.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

import numpy as np

from services.enhance.quality import music
from services.enhance.quality.fidelity import sampled
from services.enhance.quality.prosody import load_prosody, measure

if TYPE_CHECKING:
    from services.enhance.quality.campplus import CamppEncoder
    from services.enhance.quality.dnsmos import Dnsmos
    from services.enhance.quality.fidelity import FidelityChecker
    from services.enhance.quality.overlap import Frames, OverlapTest
    from services.enhance.quality.speaker import SpeakerEncoder
    from services.enhance.quality.vad import SpeechFraction
    from services.enhance.resampled import Resampled


@dataclass
class AnnotationInput:
    segment_id: str
    text: str
    language: str | None
    before: np.ndarray
    before_rate: int
    after: np.ndarray
    after_rate: int
    overlap_frames: Frames | None = None  # ``before``'s, when the caller has them
    around: tuple[np.ndarray, np.ndarray] | None = None  # the input either side, at before_rate
    # fields computed on this very input before restoration (services/enhance/early.py)
    known: dict[str, Any] = field(default_factory=dict)


class Annotator(Protocol):
    """What the steps read off the annotator (annotate.py): its models and thresholds."""

    dnsmos: Dnsmos
    speaker: SpeakerEncoder
    vad: SpeechFraction
    fidelity: FidelityChecker
    fraction: float
    speaker_threshold: float
    cer_threshold: float
    fidelity_checked: int

    @property
    def overlap(self) -> OverlapTest: ...

    @property
    def label_model(self) -> CamppEncoder | None: ...

    def input_overlap(self, x: np.ndarray, rate: int, rs: Resampled,
                      size16k: int | None = None,
                      frames: Frames | None = None) -> float | None: ...


@dataclass
class Batch:
    """A batch being annotated: its items, their input and restored audio at 16 kHz, and per
    item the fields the steps have set so far."""

    items: list[AnnotationInput]
    before: list[np.ndarray]
    after: list[np.ndarray]
    rs: Resampled
    fields: list[dict[str, Any]] = field(default_factory=list)
    shared: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.fields:
            self.fields = [{} for _ in self.items]


class Step(ABC):
    name: ClassVar[str]
    fields: ClassVar[tuple[str, ...]]

    def load(self, ann: Annotator) -> None:
        """Nothing to load unless the step says so."""

    @abstractmethod
    def run(self, ann: Annotator, batch: Batch) -> None:
        """Set this step's ``fields`` on every item of ``batch`` (``batch.fields``)."""


class DnsmosStep(Step):
    name, fields = "dnsmos", ("dnsmos_before", "dnsmos_after")

    def load(self, ann: Annotator) -> None:
        ann.dnsmos.load()

    def run(self, ann: Annotator, batch: Batch) -> None:
        n = len(batch.items)
        mos = ann.dnsmos.score(batch.before + batch.after)
        for i, f in enumerate(batch.fields):
            f["dnsmos_before"], f["dnsmos_after"] = mos[i], mos[n + i]


class SpeakerStep(Step):
    name = "speaker"
    fields = ("speaker_embedding", "speaker_consistency", "speaker_parts", "multi_speaker")

    def load(self, ann: Annotator) -> None:
        ann.speaker.load()

    def run(self, ann: Annotator, batch: Batch) -> None:
        for f, sc in zip(batch.fields, ann.speaker.score(batch.after)):
            c = sc.consistency
            f.update(speaker_embedding=sc.embedding, speaker_consistency=c,
                     speaker_parts=sc.parts,
                     multi_speaker=c is not None and c < ann.speaker_threshold)


class CamppStep(Step):
    """CAM++'s embedding beside Resemblyzer's, when ``ONSEI_QUALITY_SPEAKER_LABEL_MODEL``
    names it."""

    name, fields = "campplus", ("speaker_embedding_campplus",)

    def load(self, ann: Annotator) -> None:
        _ = ann.label_model

    def run(self, ann: Annotator, batch: Batch) -> None:
        model = ann.label_model
        cam = model.embed(batch.after) if model is not None else None
        for i, f in enumerate(batch.fields):
            f["speaker_embedding_campplus"] = None if cam is None else cam[i]


class VadStep(Step):
    """Silero's speech windows of the restored audio and its speech fraction
    (``shared["windows"]``, ``shared["fractions"]``: prosody reads them)."""

    name, fields = "vad", ()

    def load(self, ann: Annotator) -> None:
        ann.vad.load()

    def run(self, ann: Annotator, batch: Batch) -> None:
        windows = ann.vad.windows(batch.after)
        batch.shared["windows"] = windows
        batch.shared["fractions"] = [float(w.mean()) if w.size else 0.0 for w in windows]


class ProsodyStep(Step):
    name, fields = "prosody", ("prosody",)

    def load(self, ann: Annotator) -> None:
        load_prosody()

    def run(self, ann: Annotator, batch: Batch) -> None:
        fractions = batch.shared["fractions"]
        for i, (f, it) in enumerate(zip(batch.fields, batch.items)):
            f["prosody"] = measure(batch.after[i], batch.before[i], it.text, it.language,
                                   fractions[i])


class MusicStep(Step):
    """Held tones in the input's pauses (Silero run on the input), the file's pauses around
    the segment counted too (its input either side: one VAD call for the whole batch). A
    segment scored before restoration (``known``) is not scored again."""

    name, fields = "music", ("music",)

    def run(self, ann: Annotator, batch: Batch) -> None:
        rs, items = batch.rs, batch.items
        todo = [i for i, it in enumerate(items) if "music" not in it.known]
        around = [None if (a := items[i].around) is None else
                  (rs(a[0], items[i].before_rate, music.SR),
                   rs(a[1], items[i].before_rate, music.SR)) for i in todo]
        got = music.input_scores(ann.vad.windows, [batch.before[i] for i in todo], around)
        for f, it in zip(batch.fields, items):
            f["music"] = it.known.get("music")
        for i, m in zip(todo, got):
            batch.fields[i]["music"] = m


class FidelityStep(Step):
    """The re-transcription of the sampled segments (``ONSEI_QUALITY_FIDELITY_FRACTION``)."""

    name = "fidelity"
    fields = ("fidelity_cer", "fidelity_text", "restoration_changed_text")

    def run(self, ann: Annotator, batch: Batch) -> None:
        items = batch.items
        picked = [i for i, it in enumerate(items) if sampled(it.segment_id, ann.fraction)]
        if not picked:
            return
        scores = ann.fidelity.check([(batch.after[i], items[i].text, items[i].language)
                                     for i in picked])
        for i, sc in zip(picked, scores):
            batch.fields[i].update(fidelity_cer=sc.cer, fidelity_text=sc.transcript,
                                   restoration_changed_text=sc.cer > ann.cer_threshold)
        ann.fidelity_checked += len(picked)


class OverlapStep(Step):
    """Two talkers at once, on the input (from the frames the writer found, where it did)."""

    name, fields = "overlap", ("overlap",)

    def load(self, ann: Annotator) -> None:
        ann.overlap.load()

    def run(self, ann: Annotator, batch: Batch) -> None:
        for f, it, x in zip(batch.fields, batch.items, batch.before):
            f["overlap"] = ann.input_overlap(it.before, it.before_rate, batch.rs, x.size,
                                             it.overlap_frames)


# the annotators, in the order they run
STEPS: tuple[Step, ...] = (DnsmosStep(), SpeakerStep(), CamppStep(), VadStep(), ProsodyStep(),
                           MusicStep(), FidelityStep(), OverlapStep())
