"""Decoder calls on a CPU: rows in calls of CPU_DECODE_ROWS, a short last call joined to the
one before (greedy decoding costs a call its longest text's steps)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from services.asr.batched import CPU_DECODE_ROWS, cpu_decode_parts


def sizes(n: int, rows: int = CPU_DECODE_ROWS) -> list[int]:
    return [p.stop - p.start for p in cpu_decode_parts(n, rows)]


@pytest.mark.parametrize(("n", "expected"), [
    (0, []), (1, [1]), (4, [4]), (5, [5]), (6, [6]), (7, [4, 3]), (8, [4, 4]),
    (10, [4, 6]), (11, [4, 4, 3]), (16, [4, 4, 4, 4]),
])
def test_a_short_last_call_joins_the_one_before(n: int, expected: list[int]) -> None:
    assert sizes(n, 4) == expected


@pytest.mark.parametrize("n", range(40))
def test_every_row_once_in_order_and_no_call_over_one_and_a_half_times_the_rows(n: int) -> None:
    parts = cpu_decode_parts(n)
    covered = [i for p in parts for i in range(p.start, p.stop)]
    assert covered == list(range(n))
    assert all(0 < p.stop - p.start <= CPU_DECODE_ROWS * 3 // 2 for p in parts)


class _Tokenizer:
    """What the decoding options read of a tokenizer: its language and special tokens."""

    non_speech_tokens = (1, 2)
    transcribe = translate = sot = sot_prev = sot_lm = no_speech = 3

    def __init__(self, language: str) -> None:
        self.language_code = language


@pytest.mark.parametrize(("on", "skip", "want"), [
    (True, [], {"en": True, "ja": True}),
    (True, ["en"], {"en": False, "ja": True}),
    (False, [], {"en": False, "ja": False}),
])
def test_the_punctuation_prompt_is_given_per_language(on: bool, skip: list[str],
                                                      want: dict[str, bool]) -> None:
    from types import SimpleNamespace

    from services.asr.batched import ClipTranscriber
    from services.asr.punctuation import PROMPTS
    from services.asr.settings import AsrSettings

    settings = AsrSettings(input_url="/tmp/in", output_url="/tmp/out",
                           asr_punctuation_prompt=on, asr_punctuation_prompt_skip=skip)
    holder = SimpleNamespace(settings=settings)
    for lang, prompted in want.items():
        options = ClipTranscriber._options(holder, _Tokenizer(lang), 5)  # type: ignore[arg-type]
        assert options.initial_prompt == (PROMPTS[lang] if prompted else None)


class _Span:
    """A window over ``audio[a:b]`` (batched.Window)."""

    def __init__(self, a: int, b: int) -> None:
        self.a, self.b = a, b

    def audio(self, audio):
        return audio[self.a:self.b]

    def frames(self, hop: int) -> int:
        return (self.b - self.a) // hop


def test_words_are_aligned_one_row_at_a_time_on_a_cpu_as_in_one_call(asr_stage,
                                                                      monkeypatch) -> None:
    """A CPU aligns each row in a call of its own (one call held every row's cross-attention
    keys and values at the stage's peak); the words are those of one call over every row."""
    from fixtures.speechgen import concat, silence, synth
    from services.asr import batched
    from tests.services.asr.conftest import EN_TEST, Calls

    assert batched.align_parts(3, on_cpu=True) == [slice(0, 1), slice(1, 2), slice(2, 3)]
    assert batched.align_parts(3, on_cpu=False) == [slice(0, 3)]
    speech = [concat([silence(0.3), synth(t), silence(0.3)]) for t in EN_TEST[:3]]
    audio = concat(speech)
    bounds = np.cumsum([0] + [s.size for s in speech])
    windows = [_Span(int(a), int(b)) for a, b in itertools.pairwise(bounds)]
    model = asr_stage._loaded.model
    counted = Calls(model.model)
    model.model = counted
    try:
        tr = batched.ClipTranscriber(model, asr_stage.settings)
        feats = tr.features(audio, windows)
        rows = tr.rows(feats)
        apart = tr.transcribe(feats, "en", rows, frames=tr.frames(windows))
        assert counted.calls.get("align") == len(windows)
        monkeypatch.setattr(batched, "align_parts", lambda n, on_cpu: [slice(0, n)])
        together = tr.transcribe(feats, "en", rows, frames=tr.frames(windows))
        assert counted.calls["align"] == len(windows) + 1
    finally:
        model.model = counted._model
    for a, b in zip(apart, together, strict=True):
        assert a.words and [w[0] for w in a.words] == [w[0] for w in b.words]
        assert np.allclose([w[1:3] for w in a.words], [w[1:3] for w in b.words], atol=0.021)


def test_on_a_cpu_the_heaps_free_pages_go_back_before_each_model_phase(asr_stage,
                                                                        monkeypatch) -> None:
    """Encoding, beam search and word alignment each start on a heap whose free pages were
    handed back: what a call uses is resident, not what earlier calls left free (a long
    member's heap grew with it)."""
    from fixtures.speechgen import concat, silence, synth
    from services.asr import batched
    from tests.services.asr.conftest import EN_TEST

    events: list[str] = []
    monkeypatch.setattr(batched, "give_back", lambda *a: events.append("give_back"))

    class Logged:
        def __init__(self, model) -> None:
            self._model = model

        def __getattr__(self, name: str):
            attr = getattr(self._model, name)
            if not callable(attr):
                return attr

            def logged(*a, **kw):
                events.append(name)
                return attr(*a, **kw)
            return logged

    speech = [concat([silence(0.3), synth(t), silence(0.3)]) for t in EN_TEST[:2]]
    audio = concat(speech)
    bounds = np.cumsum([0] + [s.size for s in speech])
    windows = [_Span(int(a), int(b)) for a, b in itertools.pairwise(bounds)]
    model = asr_stage._loaded.model
    model.model = Logged(model.model)
    try:
        tr = batched.ClipTranscriber(model, asr_stage.settings, Logged(asr_stage._loaded.decoder))
        feats = tr.features(audio, windows)
        texts = tr.transcribe(feats, "en", tr.rows(feats), frames=tr.frames(windows))
    finally:
        model.model = model.model._model
    assert all(t.words for t in texts)
    phases = [e for i, e in enumerate(events) if e != "give_back" and
              (i == 0 or events[i - 1] != e)]
    assert phases == ["encode", "generate", "align"]
    for phase in phases:  # the first call of each phase comes right after a hand-back
        assert events[events.index(phase) - 1] == "give_back"
