"""`onsei export --dry-run`: what each filter would remove at the settings in force, from the
enhanced sidecars, writing nothing."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from common.storage import open_store
from services.ops.export.dryrun import dry_run, lines
from services.tokenize.filter import FilterPolicy
from tests.services.ops.export.synth import Run, Seg, quality, write_run


def _run(make_settings):
    s = make_settings()
    segs = []
    for i, (music, seconds) in enumerate(((0.0, 1.0), (0.7, 1.0), (0.9, 1.5), (0.2, 8.0),
                                          (0.6, 20.0))):
        q = quality().model_copy(update={"music": music})
        segs.append(Seg(f"show_{i:04d}", seconds, q, "show#s0"))
    segs.append(Seg("show_0005", 3.0, quality(ovrl=1.5), "show#s1"))
    write_run(open_store(s.output_url, s), s, Run(shards={0: segs}, languages={"show": "en"}),
              tokens=False)
    return s


def test_counts_each_reason_at_the_settings_given(make_settings) -> None:
    s = _run(make_settings)
    d = dry_run(s, s.output_url)
    assert (d.shards, d.segments, d.kept) == (1, 6, 2)
    assert dict(d.removed) == {"music>0.5": 3, "dnsmos_ovrl<2": 1}
    assert d.removed_seconds["music>0.5"] == 1.0 + 1.5 + 20.0
    looser = dry_run(s, s.output_url, policy=FilterPolicy(max_music=0.8, min_ovrl=0.0))
    assert dict(looser.removed) == {"music>0.8": 1} and looser.kept == 5
    text = "\n".join(lines(d))
    assert "music>0.5: would remove 3 segments" in text
    assert "< 2 s: 3 | 66.7 %" in text  # two of the three short ones


def test_cli_prints_and_writes_nothing(make_settings, tmp_path: Path, monkeypatch) -> None:
    from services.ops.export.cli import export

    s = _run(make_settings)
    for k in ("output_url", "input_url", "scratch_dir"):
        monkeypatch.setenv(f"ONSEI_{k.upper()}", str(getattr(s, k)))
    monkeypatch.setenv("ONSEI_FILTER_MAX_MUSIC", "0.65")
    before = sorted(p for p in tmp_path.rglob("*") if "scratch" not in str(p))
    res = CliRunner().invoke(export, ["--dry-run"])
    assert res.exit_code == 0, res.output
    assert "music>0.65: would remove 2 segments" in res.output
    assert "nothing written" in res.output
    assert sorted(p for p in tmp_path.rglob("*") if "scratch" not in str(p)) == before
    res = CliRunner().invoke(export, [])
    assert res.exit_code != 0 and "--to" in res.output
