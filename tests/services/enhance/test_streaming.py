"""Enhance cuts segments from a decoded stream: the same audio as cutting the whole file, while
only the audio from the next segment on is held."""

from __future__ import annotations

import numpy as np

from common.shards.audio import decode_audio, decode_chunks, flac_bytes
from services.enhance.chunking import pad_segment
from services.enhance.segments import RollingAudio


def _audio(seconds: float = 20.0, rate: int = 16000) -> np.ndarray:
    rng = np.random.default_rng(0)
    return (0.1 * rng.standard_normal(int(seconds * rate))).astype(np.float32)


def test_decode_chunks_join_to_decode_audio() -> None:
    data = flac_bytes(_audio(), 16000)
    info: dict = {}
    joined = np.concatenate(list(decode_chunks(data, 16000, info=info)))
    assert info["declared"] and abs(info["declared"] - 20.0) < 0.01
    np.testing.assert_array_equal(joined, decode_audio(data, 16000))


def test_rolling_audio_cuts_as_the_whole_file_does_and_drops_what_is_behind() -> None:
    audio = _audio()
    window = RollingAudio()
    for i in range(0, audio.size, 999):  # odd chunk sizes, as decoders give them
        window.extend(audio[i:i + 999])
    for a, b, margin in ((0, 4000, 800), (16000, 48000, 800), (audio.size - 500, audio.size, 800)):
        np.testing.assert_array_equal(window.padded(a, b, margin),
                                      pad_segment(audio, a, b, margin))
    window.drop_before(100_000)
    held = sum(c.size for c in window.chunks)
    assert window.start <= 100_000 < window.start + 999 and held == audio.size - window.start
    np.testing.assert_array_equal(window.padded(150_000, 160_000, 800),
                                  pad_segment(audio, 150_000, 160_000, 800))
