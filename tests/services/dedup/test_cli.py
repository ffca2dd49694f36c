"""``onsei dedup`` as a user runs it: one summary line, bad files named, an empty root in one
line with a non-zero exit."""

from __future__ import annotations

import json
import subprocess
import sys

from click.testing import CliRunner

from services.dedup.result import SUMMARY_KEY
from services.ops.cli import cli
from tests.services.dedup import helpers as h
from tests.system_packages import ESPEAK, POCKETSPHINX, needs

pytestmark = needs(ESPEAK, POCKETSPHINX)


def test_cli_runs_and_reports(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("ONSEI_SCRATCH_DIR", str(tmp_path / "scratch"))
    s = h.settings(tmp_path / "out", tmp_path)
    h.add_shard(s, 0, [h.original(0, "a_0000"), h.original(1, "b_0000")])
    h.add_shard(s, 1, [h.copy(0, "opus_24k", "c_0000", 2.0)])
    h.add_shard(s, 2, [h.copy(1, "gain_+6dB", "d_0000")])
    r = CliRunner().invoke(cli, ["dedup", "--output", str(tmp_path / "out"), "--range", "0-1"])
    assert r.exit_code == 0, r.output
    assert "2 shards, 3 segments: 1 clusters, 1 duplicates" in r.output
    summary = json.loads((tmp_path / "out" / SUMMARY_KEY).read_text())
    assert summary["shards"] == [0, 1]
    r = CliRunner().invoke(cli, ["dedup", "--output", str(tmp_path / "out")])
    assert r.exit_code == 0 and "3 shards, 4 segments: 2 clusters, 2 duplicates" in r.output


def test_cli_on_an_empty_root_says_so_in_one_line(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("ONSEI_SCRATCH_DIR", str(tmp_path / "scratch"))
    (tmp_path / "out").mkdir()
    r = CliRunner().invoke(cli, ["dedup", "--output", str(tmp_path / "out")])
    assert r.exit_code == 1
    lines = [ln for ln in r.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and "no enhanced shards" in lines[0], r.output


def test_a_second_run_at_once_is_refused_in_one_line(tmp_path, monkeypatch) -> None:
    from services.dedup.run import Deduper

    monkeypatch.setenv("ONSEI_SCRATCH_DIR", str(tmp_path / "scratch"))
    s = h.settings(tmp_path / "out", tmp_path)
    h.add_shard(s, 0, [h.original(0, "a_0000")])
    workdir = Deduper(s, None, None).workdir  # type: ignore[arg-type]
    workdir.mkdir(parents=True)
    held = subprocess.Popen([sys.executable, "-c", (
        "import duckdb, sys, time; c = duckdb.connect(sys.argv[1]); print('ok', flush=True); "
        "time.sleep(60)"), str(workdir / "index.duckdb")], stdout=subprocess.PIPE, text=True)
    try:
        assert held.stdout is not None and held.stdout.readline().strip() == "ok"
        r = CliRunner().invoke(cli, ["dedup", "--output", str(tmp_path / "out")])
        assert r.exit_code == 1 and "is in use" in r.output, r.output
        assert len([ln for ln in r.output.splitlines() if ln.strip()]) == 1
    finally:
        held.kill()
        held.wait()


def test_cli_refuses_bad_settings_in_one_line(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("ONSEI_DEDUP_MEMORY_LIMIT_MB", "10")
    r = CliRunner().invoke(cli, ["dedup", "--output", str(tmp_path / "out")])
    assert r.exit_code == 1 and "ONSEI_DEDUP_MEMORY_LIMIT_MB" in r.output
    assert len([ln for ln in r.output.splitlines() if ln.strip()]) == 1


def test_cli_keeps_the_copy_the_filter_settings_pass(tmp_path, monkeypatch) -> None:
    """The better-sounding copy is flagged multi_speaker: ``onsei dedup`` keeps the other, by
    the ``ONSEI_FILTER_*`` settings tokenize reads; with the rule off, the better one."""
    from services.dedup.result import DedupResult
    from services.records import Mos, Quality

    monkeypatch.setenv("ONSEI_SCRATCH_DIR", str(tmp_path / "scratch"))
    monkeypatch.setenv("ONSEI_FILTER_MULTI_SPEAKER", "true")  # off by default
    s = h.settings(tmp_path / "out", tmp_path)
    h.add_shard(s, 0, [h.original(0, "same_0000", 4.0, quality=Quality(
        multi_speaker=True, dnsmos_after=Mos(ovrl=4.0)))])
    h.add_shard(s, 1, [h.copy(0, "opus_24k", "same_0000", 3.0, quality=Quality(
        multi_speaker=False, dnsmos_after=Mos(ovrl=3.0)))])

    def kept() -> list[str]:
        r = CliRunner().invoke(cli, ["dedup", "--output", str(tmp_path / "out")])
        assert r.exit_code == 0, r.output
        from common.storage import open_store

        res = DedupResult.load(open_store(str(tmp_path / "out")))
        assert res is not None
        return [d.duplicate_of for d in res.duplicates.values()]

    assert kept() == ["same_0000@000001"]
    monkeypatch.setenv("ONSEI_FILTER_MULTI_SPEAKER", "false")
    assert kept() == ["same_0000@000000"]
