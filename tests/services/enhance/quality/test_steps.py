"""The annotators as declared steps (services/enhance/quality/steps.py): every field of the
quality record is declared by exactly one step, and an annotator added as one more step writes
its field into the sidecar's ``quality`` block, read back by the records."""

from __future__ import annotations

import dataclasses
import json
from typing import ClassVar

import numpy as np

from services.enhance.quality.annotate import AnnotationInput, Annotator
from services.enhance.quality.dnsmos import MosScore
from services.enhance.quality.records import QualityRecord
from services.enhance.quality.steps import STEPS, Batch, Step
from services.enhance.settings import EnhanceSettings
from services.records import Quality


def test_each_record_field_has_one_step() -> None:
    declared = [f for step in STEPS for f in step.fields]
    assert len(declared) == len(set(declared))
    record = {f.name for f in dataclasses.fields(QualityRecord)} - {"extra"}
    assert set(declared) == record
    assert len({s.name for s in STEPS}) == len(STEPS)


class _Scores(Step):
    """What the core steps set, as constants: the models are not what is tested here."""

    name, fields = "scores", ("dnsmos_before", "dnsmos_after", "speaker_embedding",
                              "speaker_consistency", "speaker_parts", "multi_speaker")

    def run(self, ann: Annotator, batch: Batch) -> None:
        for f in batch.fields:
            f.update(dnsmos_before=MosScore(2, 2, 2), dnsmos_after=MosScore(3, 3, 3),
                     speaker_embedding=np.zeros(256, np.float32), speaker_consistency=None,
                     speaker_parts=1, multi_speaker=False)


class _Peak(Step):
    """A new annotator: the restored audio's peak."""

    name: ClassVar[str] = "peak"
    fields: ClassVar[tuple[str, ...]] = ("peak",)
    loaded = False

    def load(self, ann: Annotator) -> None:
        type(self).loaded = True

    def run(self, ann: Annotator, batch: Batch) -> None:
        for f, x in zip(batch.fields, batch.after):
            f["peak"] = round(float(np.abs(x).max()), 3)


def test_an_added_step_reaches_the_sidecar() -> None:
    ann = Annotator(EnhanceSettings(), "cpu")
    ann.steps = (_Scores(), _Peak())
    ann.load()
    assert _Peak.loaded
    after = np.zeros(16000, np.float32)
    after[100] = 0.25
    [rec] = ann.annotate([AnnotationInput("k_0000", "hi", "en", np.zeros(48000, np.float32),
                                          48000, after, 16000)])
    q = rec.to_record()
    assert json.loads(q.to_json())["peak"] == 0.25
    assert Quality.from_json(q.to_json()).extra["peak"] == 0.25
