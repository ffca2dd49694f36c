"""The acoustic candidate keys (services/dedup/landmarks.py) on real speech: a degraded copy
shares a key with its original whatever its transcript, other speech and silence do not."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from fixtures.dedup_corpus import SR, TRANSFORMS, other_speakers
from services.dedup.fingerprint import power_spectrogram
from services.dedup.landmarks import (
    FAMILY,
    SHORT_FAMILY,
    SHORT_SECONDS,
    audio_keys,
    collision_probability,
    landmarks,
    peaks,
)
from services.dedup.text import FAMILY as TEXT_FAMILY
from tests.services.dedup.helpers import clips
from tests.system_packages import ESPEAK, POCKETSPHINX, needs

pytestmark = needs(ESPEAK, POCKETSPHINX)

# what a transcript cannot be relied on for: the audio keys must carry these on their own
DEGRADED = ("mp3_64k", "telephone_8k", "gain_-12dB", "noise_20dB", "phone+mp3+noise")


def _codes(audio: np.ndarray) -> set[int]:
    return set(landmarks(*peaks(power_spectrogram(audio, SR))).tolist())


@pytest.mark.parametrize("transform", DEGRADED)
def test_a_degraded_copy_shares_an_audio_key(transform: str) -> None:
    for c in clips():
        shared = set(audio_keys(c.audio, SR)) & set(audio_keys(TRANSFORMS[transform](c.audio),
                                                               SR))
        assert shared, (c.name, transform)


def test_landmarks_survive_copies_and_differ_between_recordings() -> None:
    jac = []
    for c in clips():
        a = _codes(c.audio)
        for t in ("mp3_64k", "telephone_8k", "noise_20dB"):
            b = _codes(TRANSFORMS[t](c.audio))
            jac.append(len(a & b) / len(a | b))
    assert min(jac) > 0.4
    for x, y in itertools.combinations(clips(), 2):  # one reader, other words
        a, b = _codes(x.audio), _codes(y.audio)
        assert len(a & b) / len(a | b) < 0.05
        assert not set(audio_keys(x.audio, SR)) & set(audio_keys(y.audio, SR))


def test_same_words_by_another_voice_share_no_audio_key() -> None:
    for c in clips():
        mine = set(audio_keys(c.audio, SR))
        for o in other_speakers(c.text):
            assert not mine & set(audio_keys(o.audio, SR)), (c.name, o.name)


def test_silence_and_tones_give_no_keys_and_families_never_collide() -> None:
    assert audio_keys(np.zeros(SR * 5, np.float32), SR) == []
    assert audio_keys(np.zeros(100, np.float32), SR) == []
    t = np.arange(SR * 5) / SR
    assert audio_keys((0.5 * np.sin(2 * np.pi * 440 * t)).astype(np.float32), SR) == []
    assert len(audio_keys(clips()[0].audio, SR)) == FAMILY.bands
    # the same items through every family: no key in common (they share one index column)
    items = np.arange(1, 200, dtype=np.uint64)
    families = [set(f.keys(items)) for f in (FAMILY, SHORT_FAMILY, TEXT_FAMILY)]
    assert not any(a & b for a, b in itertools.combinations(families, 2))


def test_short_segments_cut_or_padded_find_their_original_through_the_short_family() -> None:
    from fixtures.dedup_corpus import originals

    short = [c for c in originals() if c.audio.size <= SHORT_SECONDS * SR]
    assert len(short) >= 4
    found = {"main": 0, "both": 0}
    for c in short:
        mine = audio_keys(c.audio, SR)
        assert len(mine) == FAMILY.bands + SHORT_FAMILY.bands
        for tn in ("trim_0.5s", "trim_end_0.5s", "pad_0.5s", "boundaries_moved"):
            theirs = audio_keys(TRANSFORMS[tn](c.audio), SR)
            found["main"] += bool(set(mine[:FAMILY.bands]) & set(theirs[:FAMILY.bands]))
            found["both"] += bool(set(mine) & set(theirs))
    assert found["both"] >= found["main"] + 8, found  # 46 vs 34 of 64 when written
    # what the index pays for it: two unrelated short clips at J = 0.01 (the worst seen)
    assert collision_probability(0.01, short=True) < 1e-4
    assert collision_probability(0.2, short=True) > 2 * collision_probability(0.2, short=False)
