"""Music alone, applause and game effects (Debian game packages, fixtures/nonspeech.py) through
the real stage: no kept segment, and no text but Whisper's own filler on what it was given."""

from __future__ import annotations

import numpy as np
import pytest

from services.asr.hallucination import known_phrase

SR = 16000


@pytest.fixture(scope="module")
def sounds() -> list[tuple[str, np.ndarray]]:
    from fixtures.nonspeech import FetchError, effects, music_tracks
    from tests.system_packages import in_ci

    try:
        tracks = music_tracks(max_seconds=30)
        fx = effects()
    except FetchError as e:
        if in_ci():
            pytest.fail(f"{e}: CI must reach Debian's archive", pytrace=False)
        pytest.skip(str(e))
    gap = np.zeros(SR // 2, np.float32)
    joined = np.concatenate([np.concatenate([a, gap]) for _, a in fx])
    applause = next(a for name, a in fx if name.endswith("/applause"))
    return [*tracks[::3], ("effects", joined), ("applause", np.tile(applause, 4))]


def test_music_and_effects_alone_keep_nothing(asr_stage, sounds) -> None:
    for name, audio in sounds:
        line = asr_stage.transcribe_file(name, audio).line
        kept = [s.text for s in line.segments if s.kept]
        assert not kept, (name, kept)
        # whatever text Whisper wrote is filler or a stock phrase, never sentences
        assert all(known_phrase(s.text) or len(s.text.split()) <= 3 for s in line.segments), \
            (name, [s.text for s in line.segments])
