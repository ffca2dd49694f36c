"""Held-tone suppression ahead of the decode: a bed of held chords under espeak speech is taken
down while the speech's energy is kept; clean speech and noise pass unchanged; blocks join
without a seam; the setting (off by default) turns it on."""

from __future__ import annotations

import numpy as np
import pytest

from fixtures.signals import at_snr, chord_bed
from fixtures.speech_corpus import EN_SENTENCES
from fixtures.speechgen import concat, synth
from services.asr.music import HOP, N_FFT, _istft, _stft, suppress
from tests.system_packages import ESPEAK, require

SR = 16000
GATE = 0.75


@pytest.fixture(scope="module")
def speech() -> np.ndarray:
    """About 40 s of espeak English with pauses (two 30 s blocks)."""
    require(ESPEAK)
    x = concat([synth(s) for s in EN_SENTENCES[:12]], pause=0.6)
    return (0.3 * x / np.abs(x).max()).astype(np.float32)


def test_held_chords_under_speech_are_cut_and_the_speech_kept(speech) -> None:
    bed = at_snr(speech, chord_bed(speech.size), 5)
    y, blocks = suppress(speech + bed, GATE)
    assert blocks == 2
    got, mix = np.abs(_stft(y)) ** 2, np.abs(_stft(speech + bed)) ** 2
    s, b = np.abs(_stft(speech)) ** 2, np.abs(_stft(bed)) ** 2
    loud = mix > 1e-4 * mix.max()
    bed_bins = loud & (b > 10 * s)  # where the chords sound over the speech
    speech_bins = loud & (s > 10 * b)  # where the speech sounds over the chords
    # the chords: at least 6 dB down where they sound (9 dB measured)
    assert got[bed_bins].sum() < 0.25 * mix[bed_bins].sum()
    # the speech: its energy kept (within 1 dB) where it sounds
    assert abs(10 * np.log10(got[speech_bins].sum() / mix[speech_bins].sum())) < 1.0


def test_clean_speech_and_noise_pass_unchanged(speech) -> None:
    y, blocks = suppress(speech, GATE)
    assert blocks == 0 and np.array_equal(y, speech)
    noise = np.random.default_rng(0).normal(0, 0.05, speech.size).astype(np.float32)
    y, blocks = suppress(speech + noise, GATE)
    assert blocks == 0 and np.array_equal(y, speech + noise)


def test_a_treated_file_without_held_tones_comes_back_whole_across_blocks() -> None:
    # gate 0 treats every block; white noise has no held tone, so the gain is 1 everywhere
    # and what comes back is the input: the transform and the joins add nothing. 70 s: two
    # blocks, the 10 s tail joined to the second (a short tail is scored with more audio)
    x = np.random.default_rng(2).normal(0, 0.1, int(70.3 * SR)).astype(np.float32)
    y, blocks = suppress(x, 0.0)
    assert blocks == 2 and y.size == x.size
    assert np.max(np.abs(y - x)) < 1e-4
    assert np.max(np.abs(_istft(_stft(x[:N_FFT * 3 + HOP // 2]), N_FFT * 3 + HOP // 2)
                         - x[:N_FFT * 3 + HOP // 2])) < 1e-5


def test_the_setting_turns_it_on(tmp_path, monkeypatch, speech) -> None:
    from services.asr.stage import AsrStage
    from tests.services.asr.conftest import asr_settings

    mix = speech + at_snr(speech, chord_bed(speech.size), 5)
    off = AsrStage(asr_settings(tmp_path))  # off by default
    assert off.settings.asr_music_suppression is False
    heard, blocks = off._heard(mix)
    assert heard is mix and blocks == 0
    monkeypatch.setenv("ONSEI_ASR_MUSIC_SUPPRESSION", "true")
    heard, blocks = AsrStage(asr_settings(tmp_path))._heard(mix)
    assert blocks == 2 and not np.array_equal(heard, mix)
