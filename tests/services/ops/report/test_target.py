"""`onsei report --html FILE` writes a new file or replaces an earlier report, and nothing
else: not a tar, not a done record (nor anything under the output root's ledger, through a
symlink too)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from services.ops.report.target import GENERATOR
from tests.services.ops.report.synth import write_run


@pytest.fixture
def run(make_settings, monkeypatch):
    s = make_settings()
    write_run(s)
    monkeypatch.setenv("ONSEI_TOKENIZE_CODEC", s.tokenize_codec)
    return s


def _report(s, html: Path):
    from services.ops.cli import cli

    return CliRunner().invoke(cli, ["report", "--output", s.output_url, "--html", str(html)])


def test_refuses_what_is_not_a_report(run, tmp_path: Path) -> None:
    tar = tmp_path / "shard-000000.tar"
    tar.write_bytes(b"ustar" + bytes(1000))
    res = _report(run, tar)
    assert res.exit_code == 1
    assert res.output.strip().splitlines()[-1] == (
        f"Error: --html {tar} exists and is not an onsei report: choose another file")
    assert tar.read_bytes() == b"ustar" + bytes(1000)


def test_never_under_the_ledger(run, tmp_path: Path) -> None:
    ledger = Path(run.output_url) / "_ledger"
    done = min((ledger / "asr").rglob("*.json"))
    before = done.read_bytes()
    link = tmp_path / "report.html"
    link.symlink_to(done)
    for html in (done, ledger / "report.html", link):
        res = _report(run, html)
        assert res.exit_code == 1, res.output
        assert "_ledger/ (the run's records): choose a path outside it" in res.output
    assert done.read_bytes() == before and not (ledger / "report.html").exists()
    from services.ops.cli import cli

    status = CliRunner().invoke(cli, ["status", "--output", run.output_url])
    assert "corrupt" not in status.output


def test_replaces_an_earlier_report(run, tmp_path: Path) -> None:
    html = tmp_path / "r" / "report.html"
    assert _report(run, html).exit_code == 0
    first = html.read_text()
    assert GENERATOR in first.split("</head>")[0]
    html.write_text(first.replace("onsei run report</h1>", "stale</h1>"))
    assert _report(run, html).exit_code == 0
    assert "stale</h1>" not in html.read_text()
    # a report written before the generator tag: the same head otherwise
    html.write_text(first.replace(GENERATOR, "").replace("onsei run report</h1>", "old</h1>"))
    assert _report(run, html).exit_code == 0
    assert GENERATOR in html.read_text() and [p.name for p in html.parent.iterdir()] == [
        "report.html"]
