"""Quality fixtures: espeak speech (clean and at 0 dB SNR), real voices (pocketsphinx-testdata's
LibriVox reader and "cards" speaker), the real offline Whisper base."""

from __future__ import annotations

import numpy as np
import pytest

from fixtures.speech_corpus import EN_SENTENCES
from fixtures.speechgen import synth
from tests.system_packages import ESPEAK, POCKETSPHINX, missing, require

SR = 16000


@pytest.fixture(scope="session")
def speech() -> list[np.ndarray]:
    """Four English sentences (espeak, 16 kHz), peak 0.5."""
    require(ESPEAK)
    out = []
    for s in EN_SENTENCES[3:7]:
        x = synth(s)
        out.append((0.5 * x / np.abs(x).max()).astype(np.float32))
    return out


@pytest.fixture(scope="session")
def whisper():
    """The bundled offline Whisper base (int8, CPU), as the fidelity check loads it."""
    import os
    from pathlib import Path

    from services.enhance.quality.fidelity import whisper_loader
    from services.whisper.settings import WhisperSettings

    cache = os.environ.get("ONSEI_TEST_MODEL_CACHE", str(Path.home() / ".cache/onsei/models"))
    s = WhisperSettings(asr_model="bundled:whisper-base", model_cache=cache,
                        asr_compute_type="int8")
    return whisper_loader(s, device="cpu")()


@pytest.fixture(scope="session")
def sphinx_voices() -> dict[str, list[np.ndarray]]:
    """pocketsphinx-testdata's lines, 16 kHz: ``librivox`` (one reader), ``cards`` (another)."""
    from fixtures.known_speakers import sphinx_lines

    v = sphinx_lines()
    if not v:
        missing(POCKETSPHINX)
    return v
