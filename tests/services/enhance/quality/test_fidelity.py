"""Fidelity: the restored audio re-transcribed with the real offline Whisper base, CER vs text;
and the whole annotator on one batch."""

from __future__ import annotations

import numpy as np
import pytest

from fixtures.speech_corpus import EN_SENTENCES
from fixtures.speechgen import add_noise
from services.enhance.quality.annotate import AnnotationInput, Annotator
from services.enhance.quality.fidelity import FidelityChecker, sampled


def test_sample_is_stable_and_about_the_fraction() -> None:
    ids = [f"k{i}_{i % 7:04d}" for i in range(20000)]
    picked = [i for i in ids if sampled(i, 0.05)]
    assert 0.04 < len(picked) / len(ids) < 0.06
    assert picked == [i for i in ids if sampled(i, 0.05)]
    assert all(sampled(i, 1.0) for i in ids[:10]) and not any(sampled(i, 0) for i in ids[:10])


def test_same_words_score_low_other_words_score_high(make_settings, speech, whisper) -> None:
    fc = FidelityChecker(whisper)
    same, other = fc.check([(speech[1], EN_SENTENCES[4], "en"),
                            (speech[0], EN_SENTENCES[4], "en")])
    print(same, other)
    threshold = make_settings().quality_fidelity_cer
    assert same.cer < threshold / 2
    assert other.cer > threshold * 2


def test_annotator_fills_every_field(make_settings, speech, whisper) -> None:
    s = make_settings(quality_fidelity_fraction=1.0)
    ann = Annotator(s, fidelity=FidelityChecker(whisper))
    clean = speech[1]
    noisy48 = np.repeat(add_noise(clean, 0.0), 3) * 0.5  # input at 48 kHz, output at 16 kHz
    [rec] = ann.annotate([AnnotationInput("k_0000", EN_SENTENCES[4], "en", noisy48, 48000,
                                          clean, 16000)])
    d = rec.as_dict()
    assert d["dnsmos_after"]["ovrl"] > d["dnsmos_before"]["ovrl"]
    assert d["dnsmos_delta"]["ovrl"] == pytest.approx(
        d["dnsmos_after"]["ovrl"] - d["dnsmos_before"]["ovrl"], abs=2e-3)
    assert len(d["speaker_embedding"]) == 256
    assert d["multi_speaker"] is False
    assert d["fidelity_cer"] < s.quality_fidelity_cer and d["restoration_changed_text"] is False
    assert ann.fidelity_checked == 1 and ann.seconds > 0


def test_warm_takes_the_working_memory_at_start_with_a_loader() -> None:
    calls: list[tuple[int, str | None]] = []

    class Model:
        def transcribe(self, clip, language=None, **_):
            calls.append((len(clip), language))
            return iter(()), None

    loads: list[int] = []
    fc = FidelityChecker(loader=lambda: loads.append(1) or Model())
    assert loads == [] and calls == []  # nothing before it is asked for
    fc.warm()
    assert loads == [1] and calls == [(16_000, "en")]
    fc.check([(np.zeros(8000, np.float32), "a", "ja")])
    assert loads == [1] and calls[-1] == (8000, "ja")  # loaded once
