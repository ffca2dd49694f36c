"""The distinct-speech set for the music bed's WER (fixtures/distinct_english.py): Asterisk's
prompt list read right, only sentences read as written kept, no clip heard twice; and the
WER's spelling of titles."""

from __future__ import annotations

import numpy as np
import pytest

from fixtures.distinct_english import parse_prompt_texts, spoken
from fixtures.longform import SR, real_english, real_longform, wer, words

LISTING = """; Core Asterisk Sounds in English

vm-msgsaved: Your message has been saved.
agent-alreadyon: That agent is already logged on.  Please enter your agent number.
dictate/pause: pause
letters/at: at [@]
tt-monkeys: [sound of monkeys screaming]
conf-adminmenu-18: Please press 1 to mute or unmute yourself: or 8 for more options.
empty:
"""


def test_the_listing_gives_each_file_its_text() -> None:
    texts = parse_prompt_texts(LISTING)
    assert texts["vm-msgsaved"] == "Your message has been saved."
    assert texts["agent-alreadyon"] == ("That agent is already logged on. Please enter your "
                                        "agent number.")  # runs of spaces made one
    assert texts["dictate/pause"] == "pause"  # a folder in the name
    assert texts["conf-adminmenu-18"].endswith("yourself: or 8 for more options.")  # first ':'
    assert "empty" not in texts and not any(k.startswith(";") for k in texts)


def test_only_sentences_read_as_written_are_kept() -> None:
    texts = parse_prompt_texts(LISTING)
    kept = {name for name, text in texts.items() if spoken(name, text)}
    assert kept == {"vm-msgsaved", "agent-alreadyon", "conf-adminmenu-18"}
    assert not spoken("vm-press", "press * to cancel")  # a key Whisper may write either way
    assert not spoken("digits/oclock", "o'clock said slowly")  # a one-word folder


def test_one_round_hears_each_clip_once() -> None:
    clips = [(f"clip {i}", np.full(SR, 0.1 * (i + 1), np.float32)) for i in range(4)]
    once = real_longform(clips, seconds=600, seed=1, repeat=False)
    assert sorted(once.sentences) == [c for c, _ in clips]
    assert once.seconds < 4 * 3.1  # stopped when the clips ran out, not at 600 s
    again = real_longform(clips, seconds=30, seed=1)
    assert len(again.sentences) > 4 and again.seconds >= 30


def test_titles_score_as_said() -> None:
    assert words("Mr. Dashwood met Dr. Brown and Mrs. Smith.") == \
        ["mister", "dashwood", "met", "doctor", "brown", "and", "missus", "smith"]
    assert wer("and mister john dashwood", "And Mr. John Dashwood") == 0.0


@pytest.fixture(scope="module")
def prompts() -> list[tuple[str, np.ndarray]]:
    from fixtures.distinct_english import prompt_sentences
    from fixtures.nonspeech import FetchError
    from tests.system_packages import in_ci

    try:
        return prompt_sentences()
    except FetchError as e:
        if in_ci():
            pytest.fail(f"{e}: CI must reach Debian's archive", pytrace=False)
        pytest.skip(str(e))


def test_the_prompts_are_minutes_of_distinct_sentences(prompts) -> None:
    texts = [t for t, _ in prompts]
    assert len(texts) >= 150 and len(set(texts)) == len(texts)
    assert sum(a.size for _, a in prompts) / SR >= 8 * 60
    assert all(1.5 * SR <= a.size <= 12 * SR for _, a in prompts)
    assert "Your message has been saved." in texts
    assert not any(c in t for t in texts for c in "[]*#")


def test_a_distinct_file_hears_no_clip_twice(prompts) -> None:
    from fixtures.distinct_english import distinct_longform

    form = distinct_longform(120, seed=3)
    assert len(set(form.sentences)) == len(form.sentences)
    assert 120 <= form.seconds <= 135
    assert set(form.sentences) <= {t for t, _ in prompts + real_english()}
