"""The separation bench's oracle: it hands back the clean speech of exactly the block the
stage separates, so its rows measure the stage's gating and joins, nothing else."""

from __future__ import annotations

import numpy as np
import pytest

from bench.wild.music_separation import Oracle
from services.asr.separation import separate

SR = 16000


def test_the_oracle_gives_the_clean_speech_of_each_separated_block() -> None:
    rng = np.random.default_rng(0)
    clean = rng.standard_normal(50 * SR).astype(np.float32)
    mix = clean + rng.standard_normal(clean.size).astype(np.float32)
    heard, treated = separate(mix, 0.0, Oracle(mix, clean))
    assert treated == 2 and np.array_equal(heard, clean)


def test_the_oracle_refuses_audio_that_is_not_a_block() -> None:
    mix = np.zeros(40 * SR, np.float32)
    with pytest.raises(ValueError, match="not a block"):
        Oracle(mix, mix).vocals(np.ones(SR, np.float32))
