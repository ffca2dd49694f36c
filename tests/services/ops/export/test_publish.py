"""Where `onsei export` may write: only over an export it wrote (its marker), never the current
directory, the output root, a directory above either, or the ledger; a swap killed between its
two renames is undone by the next export."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from common.storage import open_store
from services.ops.export.publish import (
    MARKER,
    ExportTargetError,
    _lock,
    new_marker,
    read_marker,
    recover,
)
from services.ops.export.run import export
from services.ops.export.write import SplitPlan
from tests.services.ops.export.synth import default_run, lines_of, write_run

REPO = Path(__file__).resolve().parents[4]


def _run(make_settings):
    s = make_settings()
    write_run(open_store(s.output_url, s), s, default_run(files_per_shard=2, shards=2))
    return s


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def _beside(dest: Path) -> list[str]:
    return sorted(p.name for p in dest.parent.iterdir() if p.name.startswith(f".{dest.name}."))


def test_a_directory_it_did_not_write_is_kept(make_settings, tmp_path: Path) -> None:
    """A project directory holding a README.md (what made a directory an export before)."""
    s = _run(make_settings)
    proj = tmp_path / "proj"
    (proj / "src").mkdir(parents=True)
    (proj / "README.md").write_text("# my project\n")
    (proj / "src" / "main.py").write_text("print('hi')\n")
    before = _tree(proj)
    with pytest.raises(ExportTargetError, match=f"not written by onsei export \\(no {MARKER}\\)"):
        export(s, s.output_url, str(proj))
    assert _tree(proj) == before and _beside(proj) == []
    out = tmp_path / "set"
    # an export: replaced
    export(s, s.output_url, str(out), plan=SplitPlan(validation_fraction=0.0))
    assert read_marker(out) is not None and (out / "README.md").is_file()
    first = read_marker(out)
    export(s, s.output_url, str(out), plan=SplitPlan(validation_fraction=0.0))
    second = read_marker(out)
    assert first and second and second.export_id != first.export_id and _beside(out) == []
    empty = tmp_path / "empty"
    empty.mkdir()
    export(s, s.output_url, str(empty), plan=SplitPlan(validation_fraction=0.0))
    assert lines_of(empty)["train"]


@pytest.mark.parametrize("where", [".", "..", "out", "/", "out/_ledger/sets", "cwd-link"])
def test_cwd_output_root_and_above_refused(make_settings, tmp_path: Path, monkeypatch,
                                          where: str) -> None:
    s = _run(make_settings)
    cwd = tmp_path / "work"
    cwd.mkdir()
    (cwd / "README.md").write_text("# notes\n")  # an export's card, to the old check
    (cwd / "notes.txt").write_text("keep\n")
    (tmp_path / "link").symlink_to(cwd)
    monkeypatch.chdir(cwd)
    to = {"out": s.output_url, "out/_ledger/sets": f"{s.output_url}/_ledger/sets",
          "cwd-link": str(tmp_path / "link")}.get(where, where)
    before = _tree(tmp_path)
    with pytest.raises(ExportTargetError, match="an export replaces its --to whole"):
        export(s, s.output_url, to, plan=SplitPlan(validation_fraction=0.0))
    assert _tree(tmp_path) == before


def test_cli_refusal_is_one_line(make_settings, tmp_path: Path, monkeypatch) -> None:
    from services.ops.cli import cli

    s = _run(make_settings)
    monkeypatch.setattr("services.stages.PipelineSettings", lambda: s)
    monkeypatch.chdir(tmp_path)
    res = CliRunner().invoke(cli, ["export", "--to", "."])
    assert res.exit_code == 1
    assert res.output.strip().splitlines() == [
        ("Error: --to . is the current directory or one above it: an export replaces its --to "
         "whole; choose a directory of its own")]


_KILL = textwrap.dedent("""
    import os, signal, sys
    from pathlib import Path
    from services.ops.export.run import export
    from services.ops.export.write import SplitPlan
    from services.stages import PipelineSettings

    out, scratch, to = sys.argv[1:4]
    rename = os.rename

    def killed_between(src, dst, *a, **k):  # the new export about to take the old one's place
        if Path(dst) == Path(to) and ".partial-" in Path(src).name:
            os.kill(os.getpid(), signal.SIGKILL)
        return rename(src, dst, *a, **k)

    os.rename = killed_between
    export(PipelineSettings(output_url=out, scratch_dir=scratch), out, to,
           plan=SplitPlan(validation_fraction=0.0))
""")


def test_sigkill_between_the_renames(make_settings, tmp_path: Path) -> None:
    s = _run(make_settings)
    to = tmp_path / "set"
    export(s, s.output_url, str(to), plan=SplitPlan(seed=1, validation_fraction=0.5))
    before = _tree(to)
    proc = subprocess.run([sys.executable, "-c", _KILL, s.output_url, s.scratch_dir, str(to)],
                          cwd=REPO, capture_output=True, text=True, timeout=300,
                          check=False)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    assert not to.exists()
    left = _beside(to)
    assert [n.split("-")[0] for n in left] == [".set.old", ".set.partial"], left
    assert recover(to) == [f"restored {to} from {left[0]}", f"removed {left[1]}"]
    assert _tree(to) == before and _beside(to) == []
    res = export(s, s.output_url, str(to), plan=SplitPlan(validation_fraction=0.0))
    assert res.recovered == [] and _beside(to) == [] and not lines_of(to)["validation"]


def _leftover(dest: Path, kind: str, marked: bool = True, created_at: float = 0.0) -> Path:
    p = dest.parent / f".{dest.name}.{kind}-{os.urandom(8).hex()}"
    p.mkdir()
    (p / "README.md").write_text(f"{kind} {created_at}\n")
    if marked:
        m = new_marker().model_copy(update={"created_at": created_at})
        (p / MARKER).write_text(m.to_json())
    return p


def test_export_start_restores_and_cleans(make_settings, tmp_path: Path) -> None:
    """Leftovers as a kill leaves them (no --to, two exports set aside, a partial), plus one
    that is not an export's and one a running export holds: the newest old export comes back,
    the rest that are the export's own are removed."""
    s = _run(make_settings)
    to = tmp_path / "set"
    older = _leftover(to, "old", created_at=1.0)
    newer = _leftover(to, "old", created_at=2.0)
    partial = _leftover(to, "partial")
    foreign = _leftover(to, "partial", marked=False)
    live = _leftover(to, "partial")
    fd = _lock(live)
    assert fd is not None
    try:
        done = recover(to)
        assert done[0] == f"restored {to} from {newer.name}"
        assert sorted(done[1:]) == sorted(f"removed {p.name}" for p in (older, partial))
        assert (to / "README.md").read_text() == "old 2.0\n"
        assert sorted(_beside(to)) == sorted([foreign.name, live.name])
    finally:
        os.close(fd)
    to_two = tmp_path / "two"
    _leftover(to_two, "old", created_at=3.0)
    res = export(s, s.output_url, str(to_two), plan=SplitPlan(validation_fraction=0.0))
    assert res.recovered[0].startswith(f"restored {to_two}")
    assert _beside(to_two) == [] and lines_of(to_two)["train"]


def test_s3_prefix_without_marker_refused(make_settings, s3_bucket: str) -> None:
    s = make_settings()
    write_run(open_store(s.output_url, s), s, default_run(files_per_shard=2, shards=1))
    to = f"s3://{s3_bucket}/docs"
    target = open_store(to, s)
    target.write_bytes("README.md", b"# not an export\n")
    target.write_bytes("train/notes.txt", b"keep\n")
    with pytest.raises(ExportTargetError, match="holds objects and no .onsei-export.json"):
        export(s, s.output_url, to)
    assert sorted(target.list("")) == ["README.md", "train/notes.txt"]
    with pytest.raises(ExportTargetError, match="is the output root"):
        export(s, f"s3://{s3_bucket}/docs/run", f"s3://{s3_bucket}/docs")
