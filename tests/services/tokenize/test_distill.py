"""distill-neucodec through our loader: F = T // 320 + 1 (slow: builds a second model)."""

from __future__ import annotations

from pathlib import Path

import pytest

from fixtures.factories.neucodec import build_small_neucodec
from services.tokenize.encode import encode_batch, prepare
from tests.services.tokenize.conftest import tone


@pytest.mark.slow
def test_distill_token_counts(tmp_path: Path) -> None:
    from services.tokenize.loader import load_codec

    d = build_small_neucodec(tmp_path / "distill", variant="distill-neucodec")
    lc = load_codec(d, "distill-neucodec", "cpu")
    for n in (320, 640, 3200, 3201, 8000):
        it = prepare(lc.model, "distill-neucodec", tone(n, 16_000))
        (codes,) = encode_batch(lc.model, [it], "exact")  # the library, one at a time
        assert codes.shape == (n // 320 + 1,)
