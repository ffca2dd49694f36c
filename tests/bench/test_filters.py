"""The false-drop bench's bookkeeping: each reason under its filter, the rows' counts per half
and for short segments, and the halves fixed by name."""

from __future__ import annotations

import numpy as np

from bench.filters import Unit, filter_of, met, rows_of
from fixtures.clean_speech import CleanFile


def test_each_reason_under_its_filter() -> None:
    assert [filter_of(r) for r in ("no_speech", "language", "hallucination", "text_coverage",
                                   "too_short", "low_confidence", "multi_speaker",
                                   "dnsmos_ovrl<2", "speech_fraction<0.1", "music>0.5",
                                   "overlap>0.3")] == [
        "no_speech", "language", "hallucination", "text_coverage", "too_short",
        "other asr flags", "multi_speaker", "dnsmos_ovrl", "speech_fraction", "music", "overlap"]


def test_rows_count_halves_and_short_segments() -> None:
    units = [Unit("s", "f1", "a", "tune", 1.0, ["music>0.5"]),
             Unit("s", "f2", "a", "held", 3.0, ["music>0.5", "multi_speaker"]),
             Unit("s", "f3", "b", "held", 1.5, []),
             Unit("s", "f4", "b", "tune", 8.0, ["language"])]
    rows = {r["name"].split(" false")[0].split(" (off")[0]: r for r in rows_of("s", True, units)}
    music = rows["filters: music"]
    assert music["ours"] == 0.5 and music["ratio"] == 0.5  # 2 of 4; 1 of the 2 under 2 s
    assert "tune 1/2, held 1/2, < 2 s 1/2" in music["name"] and music["goal"] == "<= 1%"
    assert rows["filters: language"]["ours"] == 0.25 and rows["filters: language"]["met"] is False
    assert rows["filters: no_speech"]["met"] is True  # none of 4 dropped
    together = next(r for r in rows_of("s", False, units) if "together" in r["name"])
    assert "3/4 dropped" in together["name"]  # multi_speaker alone would not count: off


def test_halves_are_fixed_by_name() -> None:
    files = [CleanFile(f"set.voice.{i:03d}", "voice", "en", np.zeros(1, np.float32))
             for i in range(40)]
    halves = [f.half for f in files]
    assert halves == [f.half for f in files] and 10 < halves.count("tune") < 30


def test_met_needs_short_segments_within_the_goal_too() -> None:
    assert met(1, 200, (0, 50), 0.01) is True
    assert met(1, 200, (1, 20), 0.01) is False  # 0.5 % of all, 5 % of the short ones
    assert met(0, 0, (0, 0), 0.01) is None
