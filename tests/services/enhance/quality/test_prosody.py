"""Prosody annotations against signals whose answer is known: tones and a synthetic vowel at a
set f0, espeak speech in white noise at set SNRs, silence and tones for the speech fraction."""

from __future__ import annotations

import numpy as np
import pytest

from fixtures.signals import vowel
from fixtures.speechgen import add_noise
from services.enhance.quality import prosody as P

SR = 16000


def _tone(f0: float, seconds: float = 3.0, square: bool = False) -> np.ndarray:
    t = np.arange(int(seconds * SR)) / SR
    x = np.sin(2 * np.pi * f0 * t)
    return (np.sign(x) if square else 0.5 * x).astype(np.float32)


@pytest.mark.parametrize("f0", [90.0, 150.0, 220.0, 330.0])
def test_pitch_of_tones_and_a_gliding_vowel(f0: float) -> None:
    mean, std = P.pitch(_tone(f0))
    assert mean == pytest.approx(f0, rel=0.01) and std < 0.01 * f0  # a tone: under 1 % spread
    mean, std = P.pitch(vowel(f0, 0.1 * f0))
    assert mean == pytest.approx(f0, rel=0.02)
    assert std == pytest.approx(0.1 * f0 / np.sqrt(2), rel=0.15)  # std of a sine: depth / sqrt 2


def test_no_pitch_in_silence_or_noise_free_nothing() -> None:
    assert P.pitch(np.zeros(SR, np.float32)) == (None, None)
    assert P.pitch(np.zeros(100, np.float32)) == (None, None)


@pytest.mark.parametrize("snr", [0.0, 5.0, 10.0, 20.0])
def test_snr_of_speech_in_white_noise(speech, snr: float) -> None:
    errs = [P.snr_db(add_noise(x, snr, i)) - snr for i, x in enumerate(speech)]
    assert max(abs(e) for e in errs) < 1.5, errs


def test_snr_edges(speech) -> None:
    assert P.snr_db(speech[0]) == P.SNR_MAX  # espeak's pauses are digital silence
    assert P.snr_db(np.zeros(SR, np.float32)) is None and P.snr_db(speech[0][:1000]) is None


def test_speech_fraction_tells_speech_from_silence_and_tones(speech) -> None:
    assert P.speech_fraction(np.zeros(6 * SR, np.float32)) == 0.0
    assert P.speech_fraction(_tone(220.0, 6.0, square=True)) < 0.05
    assert P.speech_fraction(_tone(150.0, 6.0)) < 0.05
    assert P.speech_fraction(np.array([], np.float32)) == 0.0
    assert min(P.speech_fraction(x) for x in speech) > 0.6


def test_speaking_rate_units() -> None:
    assert P.text_units("Hello, world! 42", "en") == (12, P.CHARS)
    pytest.importorskip("pykakasi")
    assert P.text_units("こんにちは", "ja") == (5, P.MORA)
    assert P.text_units("キャット", "ja") == (3, P.MORA)  # キャ ッ ト: a small kana joins
    assert P.text_units("東京に行きました", "ja") == (10, P.MORA)  # from the kanji's reading


def test_measure_puts_it_together(speech) -> None:
    x = speech[0]
    m = P.measure(x, add_noise(x, 10.0, 0), "one two three", "en")
    assert m.speaking_rate == pytest.approx(11 / (m.speech_fraction * x.size / SR))
    assert m.speaking_rate_unit == P.CHARS and abs(m.snr - 10.0) < 1.5
    assert 60 < m.pitch_mean < 300 and m.pitch_std > 1
    silent = P.measure(np.zeros(2 * SR, np.float32), np.zeros(2 * SR, np.float32), "hi", "en")
    assert silent.speech_fraction == 0 and silent.speaking_rate is None and silent.snr is None
