"""Enhance as declared steps (services/enhance/chain.py), composed in the stage spec: a step
added to the spec's list runs and writes the fields it declares, every sidecar key is declared
by a step, and a segment the music rule drops before restoration never reaches the restorer."""

from __future__ import annotations

import json
import tarfile
from collections.abc import Iterable, Iterator
from dataclasses import replace
from types import SimpleNamespace
from typing import ClassVar

import numpy as np

from common.stages.engine import Engine
from fixtures.speechgen import make_shard, wav_bytes
from services.dedup.spectrum import numpy_powers
from services.enhance import stage as stage_module
from services.enhance.backends import NoneBackend
from services.enhance.chain import Item, Step
from services.enhance.chunking import ChunkGeometry
from services.enhance.early import EarlyFilter
from services.enhance.flow import Enhancer
from services.enhance.quality.vad import SpeechFraction
from services.enhance.restore import Restore
from services.enhance.segments import CutSegment, SegmentSpec
from services.enhance.spec import SPEC
from services.rules.policy import FilterPolicy
from services.stages import PIPELINE
from tests.services.enhance.helpers import asr_line, speech

SR = 16000


class Peak(Step):
    """A step added in the spec: each sidecar gets its restored audio's peak."""

    name: ClassVar[str] = "peak"
    fields: ClassVar[tuple[str, ...]] = ("peak",)

    @classmethod
    def make(cls, ctx: object) -> Peak:
        return cls()

    def run(self, batch: list[Item]) -> list[Item]:
        for it in batch:
            assert it.meta is not None
            it.meta = it.meta.model_copy(update={"peak": round(float(np.abs(it.audio).max()),
                                                              3)})
        return batch


def test_a_step_added_in_the_spec_writes_its_fields(make_settings, tmp_path,
                                                    monkeypatch) -> None:
    steps = list(SPEC.steps)
    steps.insert(steps.index("services.enhance.sidecar:SidecarStep") + 1,
                 f"{__name__}:Peak")
    monkeypatch.setattr(stage_module, "SPEC", replace(SPEC, steps=tuple(steps)))
    raw, out = tmp_path / "raw", tmp_path / "out"
    x = 0.4 * np.sin(2 * np.pi * 200 * np.arange(3 * SR) / SR).astype(np.float32)
    make_shard(raw / "shard-000000.tar", {"a": {"wav": wav_bytes(x)}})
    (out / "asr").mkdir(parents=True)
    (out / "asr/shard-000000.jsonl").write_text(json.dumps(
        asr_line("a", "ok", [(0.0, 1.0, True), (1.0, 1.5, False), (1.5, 3.0, True)])) + "\n")
    s = make_settings(input_url=str(raw), output_url=str(out), enhance_backend="none",
                      quality_annotations=False)
    stage = stage_module.EnhanceStage(s)
    stage._signature_powers = numpy_powers  # numpy's FFTs: torch not imported for the device
    rec = Engine(s, PIPELINE, stage).run(0).record
    with tarfile.open(out / "enhanced/shard-000000.tar") as tf:
        metas = [json.loads(tf.extractfile(m).read())  # type: ignore[union-attr]
                 for m in tf if m.name.endswith(".json")]
    assert len(metas) == rec.counts["segments"] == 2
    assert all(0.3 < m["peak"] <= 0.5 for m in metas)
    # every key of a sidecar is one a step declares
    declared = {f for cls in stage_module.SPEC.load_steps() for f in cls.fields}
    assert "peak" in declared
    assert {k for m in metas for k in m} <= declared


class CountingBackend(NoneBackend):
    """Restoration that passes audio through and counts the rows it was given."""

    in_rate = out_rate = SR
    rows = 0

    def run(self, prepared: np.ndarray) -> np.ndarray:
        type(self).rows += prepared.shape[0]
        return prepared


class CountingRestore(Restore):
    seen: ClassVar[list[str]] = []

    def run(self, items: Iterable[Item]) -> Iterator[Item]:
        def counted() -> Iterator[Item]:
            for it in items:
                self.seen.append(it.seg.spec.key)
                yield it

        return super().run(counted())


def _chords(n: int) -> np.ndarray:
    """Chords held 0.8 s each: a music bed, music alone."""
    rng = np.random.default_rng(0)
    t = np.arange(int(0.8 * SR)) / SR
    out = []
    while sum(p.size for p in out) < n:
        chord = sum(np.sin(2 * np.pi * f * h * t) / h
                    for f in 220 * 2 ** (rng.choice(24, 3, replace=False) / 12) for h in (1, 2))
        out.append(chord * np.hanning(t.size) ** 0.1)
    return (0.3 * np.concatenate(out)[:n] / 3).astype(np.float32)


def _item(serial: int, key: str, x: np.ndarray, margin: int) -> Item:
    spec = SegmentSpec(key, 0, 0.0, x.size / SR, "text", "en")
    padded = np.pad(x, (margin, margin))
    seg = CutSegment(serial, spec, x.size, padded)
    return Item(seg, np.zeros(0, np.float32), padded[margin:margin + x.size],
                (padded[:margin].copy(), padded[margin + x.size:].copy()))


def test_music_dropped_before_restoration_never_reaches_the_restorer() -> None:
    x = speech(3.0)
    clean = np.concatenate([np.zeros(SR // 2, np.float32), 0.5 * x / np.abs(x).max(),
                            np.zeros(SR // 2, np.float32)]).astype(np.float32)
    geom = ChunkGeometry.from_seconds(SR, 10.0, 1.0, 0.1, 1)
    vad = SimpleNamespace(vad=SpeechFraction())  # all the music rule reads of the annotator
    early = EarlyFilter(FilterPolicy(), vad, SR)  # type: ignore[arg-type]
    restore = CountingRestore(Enhancer(CountingBackend(), geom, 4))
    CountingRestore.seen.clear()
    CountingBackend.rows = 0
    items = [_item(0, "clean", clean, geom.margin), _item(1, "music", _chords(4 * SR),
                                                          geom.margin)]
    out = list(restore.run(early.run(items)))
    assert [it.seg.spec.key for it in out] == ["clean"]
    assert CountingRestore.seen == ["clean"]  # the music was never handed on
    assert early.dropped == {"music_0000"}
    assert [x.reasons for x in early.log.entries] == [["music>0.5"]]
    assert out[0].known["music"] is not None and out[0].known["music"] <= 0.5
    rows_music_dropped = CountingBackend.rows
    CountingBackend.rows = 0  # the clean segment alone costs the model the same rows
    list(Restore(Enhancer(CountingBackend(), geom, 4)).run(
        [_item(0, "clean", clean, geom.margin)]))
    assert CountingBackend.rows == rows_music_dropped > 0
