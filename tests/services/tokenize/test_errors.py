"""Each segment a shard cannot tokenize is filed by where it failed (services/tokenize/errors.py),
never by matching an exception's text: a sidecar that is not one, a FLAC that does not decode,
audio under a frame, and the codec's feature extractor refusing the audio are four reasons."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from services.tokenize.encode import Prepared
from services.tokenize.errors import Problem, SegmentError
from services.tokenize.flow import read_segments
from tests.services.tokenize.conftest import write_enhanced_tar


def _refuse_long(audio16: np.ndarray) -> Prepared:
    if audio16.shape[0] > 12_000:
        raise ValueError("input longer than the extractor takes")
    return Prepared(audio16, np.zeros((1, 1), np.float32), 1, audio16.shape[0])


def test_each_failure_has_its_own_reason(tmp_path: Path) -> None:
    tar = write_enhanced_tar(tmp_path / "e.tar", [("a_0000", 0.5, "fine"), ("a_0001", 1.0, "long"),
                                                 ("a_0002", 0.01, "tiny")],
                             extra={"b_0000": {"flac": b"not audio", "json": b'{"text": "x"}'},
                                    "b_0001": {"flac": b"x", "json": b"{not json"}})
    got = {s.key: s.error for s in read_segments(tar, _refuse_long, None)}
    assert got["a_0000"] is None
    assert got["a_0001"] == "prepare:ValueError: input longer than the extractor takes"
    assert got["a_0002"] == "too_short"
    assert got["b_0000"] == "audio:undecodable"
    assert got["b_0001"].startswith("bad_json:")


@pytest.mark.parametrize("problem", list(Problem))
def test_a_reason_is_its_kind_then_a_bounded_detail(problem: Problem) -> None:
    assert SegmentError(problem).reason == problem.value
    assert SegmentError(problem, "x" * 500).reason == f"{problem.value}:{'x' * 100}"
