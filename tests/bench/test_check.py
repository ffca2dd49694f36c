"""The speed guard (bench/check.py, ``python -m bench --check``): counts that do not depend on
the machine's speed, against the committed baseline; a planted regression fails it."""

from __future__ import annotations

import json

from bench.check import BASELINE, MARGINS, compare, measure

BASE = {"example": {"encoder_audio_s_per_s": 5.0, "decoder_calls_per_hour": 600.0,
                    "language_calls_per_hour": 900.0, "faults": 100000, "peak_mb": 500.0,
                    "cpu_ratio": 1.0}}


def test_counts_within_their_margins_pass() -> None:
    now = {"example": {**BASE["example"], "faults": 110000, "peak_mb": 520.0, "cpu_ratio": 1.2}}
    assert compare(now, BASE) == []


def test_each_count_past_its_margin_fails_and_names_itself() -> None:
    for key, margin in MARGINS.items():
        now = {"example": {**BASE["example"], key: BASE["example"][key] * (1 + 2 * margin)}}
        failed = compare(now, BASE)
        assert len(failed) == 1 and key in failed[0]
    slow = {"example": {**BASE["example"], "cpu_ratio": 1.5}}
    assert "CPU" in compare(slow, BASE)[0]
    assert "no baseline" in compare({"member3": BASE["example"]}, BASE)[0]


def test_the_committed_baseline_names_its_machine_and_every_case() -> None:
    base = json.loads(BASELINE.read_text())
    assert base["machine"] and base["date"]
    assert set(base["cases"]) == {"example", "member3"}
    for counts in base["cases"].values():
        assert set(MARGINS) <= set(counts) and "cpu_ratio" in counts


def test_a_window_encoded_twice_and_fresh_buffers_fail_the_guard() -> None:
    # the real stage on the bundled example (one run: the suite's time), each window's encoder
    # pass done twice and each large buffer mapped afresh (1 MiB threshold, a heap per thread)
    base = json.loads(BASELINE.read_text())["cases"]
    now = measure(["example"], {"ONSEI_BENCH_PLANT": "double-encode,fresh-buffers"}, peer=False)
    failed = compare(now, base)
    assert any("encoder_audio_s_per_s" in f for f in failed), failed
    assert any("faults" in f for f in failed), failed
    assert now["example"]["encoder_audio_s_per_s"] >= \
        1.8 * base["example"]["encoder_audio_s_per_s"]
    assert now["example"]["faults"] >= 2 * base["example"]["faults"]
