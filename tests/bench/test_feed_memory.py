"""Memory bounded by settings, not by a member's length: a 20-minute member costs at most 250 MB
more peak RSS than a 2-minute one (each measured in a fresh process, bench/feed_memory.py; the
models answer at once, what grows with length is decoding, VAD, cutting and writing)."""

from __future__ import annotations

import shutil

import pytest

from bench.feed_memory import measure

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(shutil.which("ffmpeg") is None, reason="needs ffmpeg")]


def test_asr_peak_of_a_20_minute_member() -> None:
    short, long = measure("asr", 120), measure("asr", 1200)
    assert long - short <= 250, f"asr: 2 min {short:.0f} MB, 20 min {long:.0f} MB"


def test_enhance_peak_of_a_20_minute_member() -> None:
    short, long = measure("enhance", 120), measure("enhance", 1200)
    assert long - short <= 250, f"enhance: 2 min {short:.0f} MB, 20 min {long:.0f} MB"


def test_enhance_peak_is_bounded_by_its_settings() -> None:
    # past the length that fills the pipeline's buffers, a longer member costs little more
    mid, long = measure("enhance", 1200), measure("enhance", 2400)
    assert long - mid <= 150, f"enhance: 20 min {mid:.0f} MB, 40 min {long:.0f} MB"
