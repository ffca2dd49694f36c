"""Settings that would break a run later: each is one line naming the setting before anything
starts, from ``onsei config``, ``onsei run`` and a worker's boot alike (no traceback, nothing
written, no model loaded)."""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from services.ops.cli import cli

REPO = Path(__file__).resolve().parents[2]

# name, value, what the one line says; each was accepted before and broke later (in comments)
BAD = [
    # a run over 0-2 processed the one file three times
    ("ONSEI_SHARD_PATTERN", "shard.tar", "gives every shard id the same name: it needs {id}"),
    ("ONSEI_ENHANCE_CHUNK_SECONDS", "0", "greater than or equal to 1"),
    # a 167 GiB allocation, and the shard marked done without quality
    ("ONSEI_QUALITY_DNSMOS_HOP_SECONDS", "1e-9", "below the finest hop, 0.1 s"),
    ("ONSEI_FILTER_MIN_OVRL", "nan", "finite number"),  # x < NaN is False: the filter was off
    ("ONSEI_FILTER_MIN_OVRL", "inf", "finite number"),  # every segment filtered out
    ("ONSEI_RETRY_BACKOFF_MAX_SECONDS", "1e999", "finite number"),  # parsed as infinity
    ("ONSEI_QUALITY_FIDELITY_CER", "-1", "greater than or equal to 0"),  # every segment flagged
    ("ONSEI_MAX_TASK_FAILURES", "0", "greater than or equal to 1"),  # dead-lettered unattempted
    ("ONSEI_VISIBILITY_TIMEOUT", "-5", "greater than or equal to 1"),
    ("ONSEI_TOKENIZE_BATCHING", "fast", "unknown batching 'fast'"),  # found at model load
    ("ONSEI_UNTIL", "bogus", "unknown stage 'bogus'"),  # found when a shard was handed on
]


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ONSEI_")}
    return {**env, "ONSEI_BROKER_URL": "redis://127.0.0.1:1/0", **extra}


def _one_line(output: str, name: str, want: str) -> None:
    lines = [x for x in output.splitlines() if x.strip()]
    assert lines == [lines[0]] and lines[0].startswith(f"Error: {name}: "), output
    assert want in lines[0] and "Traceback" not in output, output


@pytest.mark.parametrize("name, value, want", BAD, ids=[f"{n}={v}" for n, v, _ in BAD])
def test_onsei_config_refuses_it_in_one_line(name: str, value: str, want: str) -> None:
    res = CliRunner().invoke(cli, ["config"], env={name: value})
    assert res.exit_code == 1, res.output
    _one_line(res.output, name, want)


def test_onsei_run_refuses_a_pattern_without_id_before_anything(tmp_path: Path) -> None:
    """``--range 0-2`` over a pattern without ``{id}`` read ``shard.tar`` three times."""
    raw, out = tmp_path / "raw", tmp_path / "out"
    raw.mkdir()
    with tarfile.open(raw / "shard.tar", "w"):
        pass
    res = CliRunner().invoke(cli, ["run", "--range", "0-2", "--input", str(raw), "--output",
                                   str(out)], env={"ONSEI_SHARD_PATTERN": "shard.tar"})
    assert res.exit_code == 1
    _one_line(res.output, "ONSEI_SHARD_PATTERN", "needs {id}")
    assert not out.exists()  # nothing started


@pytest.mark.parametrize("range_", ["０-２", "٣", "0-۲"])
def test_a_range_in_other_digits_is_refused(range_: str, tmp_path: Path) -> None:
    """``int()`` reads fullwidth and Arabic-Indic digits: what the shell showed was not what
    ran. ``--range`` takes ASCII digits only, refused before anything is read or written."""
    for args in (["run", "--range", range_, "--input", str(tmp_path), "--output",
                  str(tmp_path / "out")], ["status", "--range", range_]):
        res = CliRunner().invoke(cli, args, env={"ONSEI_OUTPUT_URL": str(tmp_path / "out"),
                                                 "ONSEI_BROKER_URL": "redis://127.0.0.1:1/0"})
        assert res.exit_code == 2, (args, res.output)
        assert "expected A-B or N (ASCII digits)" in res.output, res.output
    assert not (tmp_path / "out").exists()


def test_a_worker_with_a_bad_setting_stops_at_boot_in_one_line(tmp_path: Path) -> None:
    """Before, the worker started (and waited for its broker) on a negative visibility timeout;
    now it stops at once with one line, no traceback."""
    t0 = time.monotonic()
    r = subprocess.run(
        [sys.executable, "-m", "celery", "-A", "services.tokenize", "worker", "--pool", "solo",
         "-l", "warning"], cwd=REPO, capture_output=True, text=True, timeout=60, check=False,
        env=_env(ONSEI_VISIBILITY_TIMEOUT="-5", ONSEI_OUTPUT_URL=str(tmp_path / "out")))
    assert r.returncode == 1, r.stderr[-2000:]
    _one_line(r.stderr, "ONSEI_VISIBILITY_TIMEOUT", "greater than or equal to 1")
    assert time.monotonic() - t0 < 60
