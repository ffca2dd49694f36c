"""Encoder windows: speech packed into full windows apart from the clips, and each window's
words given back to the clips they were spoken in."""

from __future__ import annotations

import numpy as np
import pytest

from services.asr.batched import ClipText
from services.asr.clips import Clip
from services.asr.windows import MAX_PAUSE_SECONDS, Window, alone, pack, split, units_of

SR = 16000


def test_pack_fills_windows_across_clips_in_file_order() -> None:
    # three 12 s clips, each two 6 s spans with a 0.5 s pause, 2 s between clips
    clips = [Clip(t, t + 12.5, pauses=[(t + 6.0, t + 6.5)]) for t in (0.0, 14.5, 29.0)]
    units = units_of(clips)
    assert [i for _, i in units] == [0, 0, 1, 1, 2, 2]
    windows = pack(units)
    assert len(windows) == 2  # one clip per window would take three
    assert all(w.seconds <= 30.0 for w in windows)
    first, second = windows
    assert [i for _, i in first.units] == [0, 0, 1, 1]  # 24 s + 0.5 + two capped pauses
    assert first.seconds == pytest.approx(24.0 + 0.5 + MAX_PAUSE_SECONDS + 0.5)
    assert [i for _, i in second.units] == [2, 2]
    assert [u for w in windows for u in w.units] == units  # nothing lost, order kept


def test_a_clip_split_across_windows_gets_its_words_from_both() -> None:
    clips = [Clip(0.0, 20.0, pauses=[(10.0, 11.0)]), Clip(22.0, 38.0, pauses=[(30.0, 31.0)])]
    windows = [Window([((0.0, 10.0), 0), ((11.0, 20.0), 0), ((22.0, 30.0), 1)]),
               Window([((31.0, 38.0), 1)])]
    # window times: [0, 10) clip 0, 10.8 s pause cap, [10.8, 19.8) clip 0, 0.8 s, [20.6, 28.6)
    w0 = ClipText("a b c", -0.2, 0.05, [(" a", 1.0, 2.0, 0.9), (" b", 12.0, 13.0, 0.9),
                                         (" c", 21.0, 22.0, 0.8)])
    w1 = ClipText("d", -0.4, 0.1, [(" d", 1.0, 2.0, 0.7)])
    one, two = split(clips, windows, [w0, w1])
    assert one.text == "a b" and [w[0] for w in one.words or []] == [" a", " b"]
    assert two.text == "c d"
    # file seconds; no audio to snap to: where the clips meet, words reach their span's edge
    assert [round(w[1], 2) for w in two.words or []] == [22.0, 32.0]
    assert (one.words or [])[-1][2] == pytest.approx(20.0)
    assert two.avg_logprob == pytest.approx(-0.3)  # one word from each window
    assert one.avg_logprob == pytest.approx(-0.2)
    texts_only = split(clips, windows, [w0, w1], keep_words=False)
    assert [t.text for t in texts_only] == ["a b", "c d"] and texts_only[0].words is None


def test_a_word_run_into_the_pause_belongs_to_the_clip_it_is_spoken_in() -> None:
    """Whisper's alignment has no gaps: the first word of the second clip starts where the
    last of the first ended, its middle inside the pause between them."""
    audio = np.zeros(7 * SR, np.float32)
    audio[int(0.2 * SR):int(1.8 * SR)] = 0.5
    audio[int(4.0 * SR):int(5.5 * SR)] = 0.5
    clips = [Clip(0.0, 2.0), Clip(4.0, 6.0)]
    (window,) = pack(units_of(clips))  # window seconds: 0-2, 0.8 s of the pause, 2.8-4.8
    t = ClipText("one two", -0.1, 0.0, [(" one", 0.2, 1.6, 0.9), (" two", 1.6, 3.0, 0.9)])
    one, two = split(clips, [window], [t], audio)
    assert (one.text, two.text) == ("one", "two")
    assert (one.words or [])[0][1:3] == pytest.approx((0.2, 1.8), abs=0.011)  # its span's end
    # its start at its span's; the window's last word, it runs on through its sound (words.run_on)
    assert (two.words or [])[0][1:3] == pytest.approx((4.0, 5.5), abs=0.011)


def test_a_window_with_text_but_no_words_gives_it_to_its_main_clip() -> None:
    clips = [Clip(0.0, 2.0), Clip(3.0, 12.0)]
    windows = pack(units_of(clips))
    assert len(windows) == 1
    one, two = split(clips, windows, [ClipText("hello there", -0.3, 0.2)])
    assert (one.text, two.text) == ("", "hello there")
    assert one.avg_logprob == pytest.approx(-0.3)  # no words: the window's own score


def test_alone_is_one_window_per_clip() -> None:
    clips = [Clip(0.0, 5.0, pauses=[(2.0, 4.0)]), Clip(8.0, 9.0)]
    windows = alone(clips)
    assert [[i for _, i in w.units] for w in windows] == [[0, 0], [1]]
    assert windows[0].seconds == pytest.approx(3.0 + MAX_PAUSE_SECONDS)
