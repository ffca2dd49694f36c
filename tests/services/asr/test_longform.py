"""Long-form fidelity: minutes of speech, two voices, random 0.3-2 s pauses.

The stage must lose no text against the peer a user would pick (faster-whisper's
``BatchedInferencePipeline``, Silero VAD, same model and batch size) on the same audio, and
keep no segment whose text is too short for its speech.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import pairwise

import pytest

from fixtures.longform import (
    LongForm,
    error_rate,
    make_longform,
    peer_transcribe,
    real_english,
    real_longform,
)
from services.asr.coverage import floor_rate, min_units, units
from services.asr.settings import AsrSettings
from tests.system_packages import ESPEAK, POCKETSPHINX, missing, require

pytestmark = pytest.mark.timeout(900)


@dataclass
class Compared:
    form: LongForm
    line: dict
    ours: float  # error rate of the kept segments' text
    peer: float

    @property
    def kept(self) -> list[dict]:
        return [s for s in self.line["segments"] if s["kept"]]


def _compare(stage, form: LongForm) -> Compared:
    line = stage.transcribe_file(form.language, form.audio).line.to_dict()
    joiner = "" if form.language == "ja" else " "
    hyp = joiner.join(s["text"] for s in line["segments"] if s["kept"])
    s = stage.settings
    # the stage's beam is the peer's shipped default (5); its batched decode reads only the
    # first of its temperatures (0), so this is the peer at its defaults
    peer = peer_transcribe(stage._loaded.model, form.audio, s.asr_languages, s.asr_batch_size,
                           s.asr_beam_size)
    c = Compared(form, line, error_rate(form.language, form.reference, hyp),
                 error_rate(form.language, form.reference, peer.text))
    print(f"{form.language}: {form.seconds:.0f} s, {len(form.sentences)} sentences, "
          f"{len(c.kept)}/{len(line['segments'])} segments kept; error ours {c.ours:.3f}, "
          f"peer {c.peer:.3f}")
    return c


# Japanese (3 min more of ours and the peer) runs with -m slow; the decoder-loop recovery it
# exercises (re-decoding short or looping clips) is tested directly in test_policy.py.
@pytest.fixture(scope="session", params=["en", pytest.param("ja", marks=pytest.mark.slow)])
def compared(request, asr_stage) -> Compared:
    require(ESPEAK)
    return _compare(asr_stage, make_longform(request.param))


def test_fixture_is_long_form(compared: Compared) -> None:
    f = compared.form
    assert f.seconds >= 180 and len(f.sentences) >= 30
    gaps = [b[0] - a[1] for a, b in zip(f.spans, f.spans[1:])]
    assert 0.29 <= min(gaps) and max(gaps) <= 2.01


def test_no_more_errors_than_the_peer(compared: Compared) -> None:
    assert compared.line["status"] == "ok"
    assert compared.line["language"] == compared.form.language
    # English: never worse than the peer by more than 0.005 (measured 0.020 vs 0.032 at beam
    # 5); Japanese (slow) keeps its earlier 0.01
    assert compared.ours <= compared.peer + (0.005 if compared.form.language == "en" else 0.01)
    assert compared.ours <= (0.10 if compared.form.language == "en" else 0.65)  # sanity


def test_every_sentence_inside_a_kept_segment(compared: Compared) -> None:
    kept = compared.kept
    for start, end in compared.form.spans:
        inside = sum(max(0.0, min(end, s["end"]) - max(start, s["start"])) for s in kept)
        assert inside >= 0.8 * (end - start), (start, end)  # VAD may split at a word gap


def test_each_segment_holds_the_text_of_its_own_speech(compared: Compared) -> None:
    """Windows are packed across clips and their words given to clips by aligned time: each
    kept segment's text is that of the sentences spoken inside it (a word given to the wrong
    neighbour counts twice here, and not at all in the whole file's error)."""
    f, lang = compared.form, compared.form.language
    joiner = "" if lang == "ja" else " "
    errors = units = 0.0
    for s in compared.kept:
        ref = joiner.join(t for t, (a, b) in zip(f.sentences, f.spans)
                          if s["start"] <= (a + b) / 2 <= s["end"])
        n = len(ref) if lang == "ja" else len(ref.split())
        errors += error_rate(lang, ref, s["text"]) * n if ref else 1.0
        units += n
    assert errors / units <= compared.ours + 0.01


def test_no_kept_segment_below_the_coverage_floor(compared: Compared) -> None:
    rate = floor_rate(compared.form.language)
    for s in compared.kept:
        assert units(s["text"]) >= min_units(s["end"] - s["start"], rate), s


def test_segments_are_tts_sized_and_ordered(compared: Compared) -> None:
    segs = compared.line["segments"]
    for a, b in pairwise(segs):
        assert a["end"] <= b["start"]
    shortest = AsrSettings().asr_segment_min_seconds
    assert all(shortest <= s["end"] - s["start"] <= 30.0 for s in compared.kept)
    assert len(compared.kept) >= 0.9 * len(segs)


@pytest.mark.slow
def test_real_recorded_speech_no_worse_than_the_peer(asr_stage) -> None:
    clips = real_english()
    if not clips:
        missing(POCKETSPHINX)
    c = _compare(asr_stage, real_longform(clips))
    assert c.line["language"] == "en"
    assert c.ours <= c.peer + 0.01
