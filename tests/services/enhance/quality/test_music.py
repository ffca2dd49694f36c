"""``quality.music``: held tones in a segment's pauses. Speech alone and speech in noise score
near 0, speech over a bed of held notes and the bed alone near 1; real game music (Debian
packages, fetched by fixtures/nonspeech.py) over real speech scores above the same speech clean."""

from __future__ import annotations

import numpy as np
import pytest

from services.enhance.quality.music import Around, context_pieces, music_score
from services.enhance.quality.prosody import speech_windows

SR = 16000


def _segment(x: np.ndarray) -> np.ndarray:
    """``x`` as an asr segment holds it: 0.3 s of the recording's own pause each side."""
    return np.pad(x, (int(0.3 * SR), int(0.3 * SR)))


def _bed(n: int, seed: int = 0) -> np.ndarray:
    """Chords held 0.8 s each (three notes with a few harmonics): a music bed."""
    rng = np.random.default_rng(seed)
    t = np.arange(int(0.8 * SR)) / SR
    out = []
    while sum(p.size for p in out) < n:
        chord = np.zeros(t.size)
        for f in 220 * 2 ** (rng.choice(24, 3, replace=False) / 12):
            chord += sum(np.sin(2 * np.pi * f * h * t) / h for h in (1, 2, 3))
        out.append(chord * np.hanning(t.size) ** 0.1)
    return np.concatenate(out)[:n].astype(np.float32)


def _mix(speech: np.ndarray, other: np.ndarray, snr_db: float) -> np.ndarray:
    gain = np.sqrt(np.mean(speech ** 2) / np.mean(other ** 2) / 10 ** (snr_db / 10))
    return (speech + gain * other[:speech.size]).astype(np.float32)


def _score(x: np.ndarray) -> float:
    s = music_score(x, speech_windows(x))
    assert s is not None
    return s


def test_speech_alone_and_in_noise_score_low(speech) -> None:
    rng = np.random.default_rng(1)
    for x in map(_segment, speech):
        assert _score(x) <= 0.15
        assert _score(_mix(x, rng.normal(0, 1, x.size).astype(np.float32), 10)) <= 0.25


def test_speech_over_a_bed_and_the_bed_alone_score_high(speech) -> None:
    for i, x in enumerate(map(_segment, speech)):
        bed = _bed(x.size, i)
        assert _score(_mix(x, bed, 10)) >= 0.6
        assert _score(_mix(x, bed, 5)) >= 0.6
        assert _score(bed) >= 0.9


def test_short_segment_is_not_scored_and_silence_is_zero() -> None:
    assert music_score(np.zeros(SR // 4, np.float32)) is None
    assert music_score(np.zeros(2 * SR, np.float32), np.zeros(62, bool)) == 0.0


def _tight(x: np.ndarray) -> np.ndarray:
    """``x`` cut where the VAD first and last hears speech: no pause of its own."""
    w = np.flatnonzero(speech_windows(x))
    return x[w[0] * 512:(w[-1] + 1) * 512]


def _around(left: np.ndarray, right: np.ndarray) -> Around:
    a, b = context_pieces(left, right)
    return Around(a, speech_windows(a), b, speech_windows(b))


def test_without_pauses_a_segment_is_not_judged(speech) -> None:
    """Speech from end to end (a short prompt cut tight): its held tones are as likely held
    vowels as notes, so it gets no score rather than a high one."""
    for x in map(_tight, speech):
        w = speech_windows(x)
        assert w.mean() > 0.95
        assert music_score(x, w) is None


def test_the_files_pauses_around_a_segment_judge_it(speech) -> None:
    """The same tight segments with the file around them: silence there scores clean, a bed
    going on there (and under the speech) scores music."""
    half = SR // 2
    for i, x in enumerate(map(_tight, speech)):
        quiet = np.zeros(half, np.float32)
        clean = music_score(x, speech_windows(x), _around(quiet, quiet))
        assert clean is not None and clean <= 0.15
        bed = _bed(x.size + 2 * half, i)
        gain = np.sqrt(np.mean(x ** 2) / np.mean(bed ** 2) / 10 ** 0.5)  # 5 dB under
        seg = x + gain * bed[half:half + x.size]
        m = music_score(seg, speech_windows(seg),
                        _around(gain * bed[:half], gain * bed[half + x.size:]))
        assert m is not None and m >= 0.6


@pytest.mark.slow
def test_real_music_under_real_speech_scores_above_clean(real_speech) -> None:
    from fixtures.nonspeech import music_tracks

    tracks = [a for _, a in _tracks(music_tracks)]
    rng = np.random.default_rng(0)
    clean, bed = [], []
    for i, x in enumerate(map(_segment, real_speech)):
        m = tracks[i % len(tracks)]
        start = int(rng.integers(20 * SR, m.size - x.size))
        clean.append(_score(x))
        bed.append(_score(_mix(x, m[start:], 10)))
    assert max(clean) <= 0.5
    assert sum(b > 0.5 for b in bed) >= 0.8 * len(bed)


def _tracks(load):
    from fixtures.nonspeech import FetchError
    from tests.system_packages import in_ci

    try:
        return load(max_seconds=120)
    except FetchError as e:
        if in_ci():
            pytest.fail(f"{e}: CI must reach Debian's archive", pytrace=False)
        pytest.skip(str(e))


@pytest.fixture(scope="module")
def real_speech() -> list[np.ndarray]:
    from fixtures.longform import real_english
    from tests.system_packages import POCKETSPHINX, require

    require(POCKETSPHINX)
    return [a for _, a in real_english()]
