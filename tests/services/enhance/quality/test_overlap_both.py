"""The trained detector with the pitch test beside it (``overlap_both.py``): the segment's
score is the detector's, or the pitch test's where that reaches the floor and is larger; the
frames the cuts read are the detector's; the setting reaches the test."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from fixtures.pyannote_models import write_checkpoint
from services.enhance.quality import overlap
from services.enhance.quality.overlap_both import BothFrames, BothTest
from services.enhance.quality.overlap_model import ModelTest, load_overlap_test
from services.enhance.resampled import Resampled
from services.enhance.settings import EnhanceSettings


@pytest.fixture(autouse=True, scope="module")
def _pyannote() -> None:
    # at run time, not collection: importing pyannote.audio (torch, lightning) takes seconds
    # in every pytest worker that collects this file
    pytest.importorskip("pyannote.audio")

SR = 16000


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory) -> Path:
    return write_checkpoint(tmp_path_factory.mktemp("segmentation") / "pytorch_model.bin")


def _frames(fire: list[bool], detected: float = 1.0) -> overlap.Frames:
    n = len(fire)
    return overlap.Frames(np.array(fire), np.ones(n, np.float32), np.ones(n, bool), detected)


def _both(model: float, pitch: float, floor: float = 0.5) -> BothFrames:
    """Frames of ten loud frames: the detector firing on ``model`` of them, the pitch test's
    share ``pitch`` (detected 1)."""
    m = _frames([i < round(model * 10) for i in range(10)])
    p = _frames([i < round(pitch * 10) for i in range(10)])
    return BothFrames(m.fire, m.power, m.loud, 1.0, p, floor)


def test_the_pitch_test_counts_from_the_floor_when_larger() -> None:
    assert _both(0.1, 0.6).share() == pytest.approx(0.6)  # the detector missed it
    assert _both(0.1, 0.4).share() == pytest.approx(0.1)  # under the floor: the detector's
    assert _both(0.8, 0.6).share() == pytest.approx(0.8)  # the larger
    assert _both(0.1, 0.4, floor=0.3).share() == pytest.approx(0.4)
    assert _both(0.2, 0.0).two.sum() == 2  # frame by frame, the detector's alone


def test_a_clip_clips_both() -> None:
    m = _frames([False] * 30 + [True] * 30)
    p = _frames([True] * 30 + [False] * 30)
    both = BothFrames(m.fire, m.power, m.loud, 1.0, p, 0.5)
    first = both.clip(0.0, 0.6)  # the first 0.6 s: frames the pitch test fires on, alone
    assert isinstance(first, BothFrames) and first.pitch is not None
    assert first.fire.size == first.pitch.fire.size > 0
    assert not first.fire.any() and first.pitch.fire.all()
    assert first.share() == pytest.approx(1.0)
    later = both.clip(0.8, 0.4)
    assert later.fire.all() and later.pitch is not None and not later.pitch.fire.any()


def test_the_setting_reaches_the_test(checkpoint) -> None:
    spec = str(checkpoint)
    test = load_overlap_test(EnhanceSettings(quality_overlap_model=spec), "cpu")
    assert isinstance(test, BothTest) and test.floor == 0.5
    assert isinstance(test.detector, ModelTest) and "pitch test" in test.info()
    test = load_overlap_test(EnhanceSettings(quality_overlap_model=spec,
                                             quality_overlap_pitch_floor=0.7), "cpu")
    assert isinstance(test, BothTest) and test.floor == 0.7
    alone = load_overlap_test(EnhanceSettings(quality_overlap_model=spec,
                                              quality_overlap_pitch_floor=0.0), "cpu")
    assert isinstance(alone, ModelTest)


def test_frames_are_the_detectors_with_the_pitch_tests_beside(checkpoint) -> None:
    test = load_overlap_test(EnhanceSettings(quality_overlap_model=str(checkpoint)), "cpu")
    assert isinstance(test, BothTest)
    x = (0.1 * np.random.default_rng(0).standard_normal(3 * SR)).astype(np.float32)
    rs = Resampled()
    f = test.frames(x, SR, rs)
    alone = test.detector.frames(x, SR, rs)
    pitch = overlap.PitchTest().frames(x, SR, rs)
    assert np.array_equal(f.fire, alone.fire) and np.array_equal(f.loud, alone.loud)
    assert f.pitch is not None and np.array_equal(f.pitch.fire, pitch.fire)
    assert f.share() == (max(alone.share(), pitch.share()) if pitch.share() >= 0.5
                         else alone.share())
