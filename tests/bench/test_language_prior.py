"""The short-clip context bench's pieces: a tiled clip, the shard's language from the files
Whisper is sure of, and the floor rule that keeps a short clip on it."""

from __future__ import annotations

import numpy as np

from bench.language_context import SR, speech_of, tiled
from bench.language_prior import floor_rule, shard_language, shards


def _look(name: str, language: str, shares: dict[str, float], variant: str = "short",
          half: str = "tune", seconds: float = 1.5) -> dict:
    return {"name": name, "language": language, "real": True, "half": half,
            "variant": variant, "seconds": seconds, "shares": shares,
            "dists": [list(shares.items())]}


def test_tiled_clip_repeats_the_speech_not_the_padding() -> None:
    speech = np.sin(np.arange(int(0.8 * SR)) / 5).astype(np.float32)
    z = np.zeros(int(0.3 * SR), np.float32)
    clip = np.concatenate([z, speech, z])
    assert abs(speech_of(clip).size - speech.size) <= SR // 100
    out = tiled(clip, 6.0)
    assert 6.0 - 0.2 <= out.size / SR - 0.6 < 6.0 + 0.8 + 0.2
    # every copy is loud, so the silent stretches are only the pauses and the padding
    loud = np.abs(out) > 0.01
    assert loud.sum() >= 6 * speech.size * 0.6


def test_shard_language_needs_agreeing_sure_files() -> None:
    sure_en = [_look(f"l{i}", "en", {"en": 0.95, "fr": 0.05}, "long") for i in range(3)]
    assert shard_language(sure_en) == "en"
    assert shard_language(sure_en[:2]) is None  # too few
    unsure = [_look("u", "en", {"en": 0.55, "nl": 0.45}, "long")] * 5  # espeak's Dutch
    assert shard_language(unsure) is None
    mixed = sure_en + [_look(f"f{i}", "fr", {"fr": 0.99}, "long") for i in range(3)]
    assert shard_language(mixed) is None


def test_floor_rule_rescues_only_towards_a_shard_language_asked_for() -> None:
    # Whisper base on a short Italian prompt: Spanish, Italian a distant second
    it = _look("lid.it.x", "it", {"es": 0.9, "it": 0.05, "pl": 0.05})
    rule = floor_rule(0.02)
    assert rule(it, ["it"], "it") is True
    assert rule(it, ["it"], None) is False  # no shard language: the stage's rule alone
    assert rule(it, ["en"], "it") is False  # the shard's language not asked for
    assert floor_rule(0.1)(it, ["it"], "it") is False


def test_intruded_shards_hold_only_other_languages_clips() -> None:
    dump = ([_look(f"lidlong.en.{i}", "en", {"en": 0.99}, "long") for i in range(3)]
            + [_look("lid.en.a", "en", {"en": 0.3, "hi": 0.7}),
               _look("lid.fr.a", "fr", {"fr": 0.4, "en": 0.6})])
    got = shards(dump, "tune")
    assert [(x["name"], h) for x, h in got["voice"]] == [("lid.en.a", "en"), ("lid.fr.a", None)]
    assert sorted((x["name"], h) for x, h in got["intruded"]) == [("lid.en.a", None),
                                                                  ("lid.fr.a", "en")]
