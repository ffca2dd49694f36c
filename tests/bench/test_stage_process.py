"""bench/stage_process.py: a stage's row from its child's rusage, and the child's environment."""

from __future__ import annotations

import pytest

from bench.stage_process import measure, stage_env, stage_row

MEASURED = {"wall_s": 12.0, "user_s": 9.0, "sys_s": 1.0, "faults": 3600, "peak_mb": 437.25,
            "audio_s": 36.0}


def test_row_reports_every_figure_and_each_per_audio_hour() -> None:
    row = stage_row("asr", MEASURED)
    assert row["stage"] == "asr" and "asr" in row["name"]
    assert (row["wall_s"], row["user_s"], row["sys_s"]) == (12.0, 9.0, 1.0)
    assert row["faults"] == 3600 and row["peak_mb"] == pytest.approx(437.25, abs=0.06)
    # 36 s of audio is a hundredth of an hour
    assert row["per_audio_hour"] == {"wall_s": 1200.0, "user_s": 900.0, "sys_s": 100.0,
                                     "faults": 360000.0}
    assert row["ours"] == pytest.approx(1000.0)  # user + system per audio hour
    assert "peak_mb" not in row["per_audio_hour"]  # a peak does not scale with length


def test_no_audio_gives_no_rate_rather_than_dividing_by_zero() -> None:
    row = stage_row("enhance", {**MEASURED, "audio_s": 0.0})
    assert row["ours"] is None and row["per_audio_hour"] == {}


def test_child_runs_the_example_settings_and_nothing_inherited(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ONSEI_ASR_BEAM_SIZE", "1")
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    env = stage_env({"ONSEI_TOKENIZE_DEVICE": "cpu"})
    assert env["ONSEI_CONFIG"].endswith("examples/offline.yaml")
    assert "ONSEI_ASR_BEAM_SIZE" not in env and "OMP_NUM_THREADS" not in env
    assert env["ONSEI_TOKENIZE_DEVICE"] == "cpu"


@pytest.mark.slow
def test_asr_runs_for_real_and_reports_its_process() -> None:
    (row,) = measure(("asr",))
    assert row["audio_s"] > 0 and row["user_s"] > 0 and row["peak_mb"] > 100
    assert row["wall_s"] > 0 and row["faults"] > 0
