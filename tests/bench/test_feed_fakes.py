"""The feed bench's instant models stand in for the real ones: every method they override
takes the same parameters, so the stage calls them as it calls the real ones."""

from __future__ import annotations

import inspect

import pytest

from bench.feed_fakes import InstantTranscriber
from services.asr.batched import ClipTranscriber


@pytest.mark.parametrize("name", [n for n, v in vars(InstantTranscriber).items()
                                  if callable(v) and not n.startswith("_")])
def test_overrides_take_the_real_parameters(name: str) -> None:
    fake = inspect.signature(getattr(InstantTranscriber, name)).parameters
    real = inspect.signature(getattr(ClipTranscriber, name)).parameters
    assert list(fake) == list(real)
