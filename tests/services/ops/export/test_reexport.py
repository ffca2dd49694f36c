"""A re-export into the same ``--to`` replaces what the earlier export wrote (its manifest in
``.onsei-export.json``) and nothing else: ``.git/``, ``.gitattributes``, ``LICENSE`` (what
cloning a dataset repo into it gives) stay, named; one the new export would overwrite refuses
it, nothing changed; a kill after the swap loses none of them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from common.storage import open_store
from services.ops.cli import cli
from services.ops.export import publish
from services.ops.export.publish import MARKER
from tests.services.ops.export.synth import default_run, lines_of, write_run

USER = {".git/config": "[core]\n", ".git/objects/ab/cdef": "blob", ".gitattributes": "*.tar lfs\n",
        "LICENSE": "CC-BY-4.0\n", "train/NOTES.txt": "mine\n"}


def _export(to: Path, *flags: str) -> str:
    res = CliRunner().invoke(cli, ["export", "--to", str(to), "--seed", "1", *flags])
    assert res.exit_code == 0, res.output
    return res.output


def _files(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): p.read_text() for p in root.rglob("*")
            if p.is_file()}


@pytest.fixture
def run(make_settings, monkeypatch):
    s = make_settings()
    write_run(open_store(s.output_url, s), s, default_run(files_per_shard=4, shards=2))
    monkeypatch.setenv("ONSEI_OUTPUT_URL", s.output_url)
    return s


def test_the_users_files_stay(run, tmp_path: Path) -> None:
    to = tmp_path / "sets" / "set"
    _export(to, "--validation-fraction", "0.3", "--test-fraction", "0.3")
    assert lines_of(to)["test"]
    manifest = json.loads((to / MARKER).read_text())["files"]
    assert "README.md" in manifest and any(f.startswith("test/") for f in manifest)
    for rel, text in USER.items():
        (to / rel).parent.mkdir(parents=True, exist_ok=True)
        (to / rel).write_text(text)
    out = _export(to, "--validation-fraction", "0")
    assert "kept in" in out and ".git, .gitattributes, LICENSE, train/NOTES.txt" in out, out
    files = _files(to)
    assert {k: files[k] for k in USER} == USER
    assert not (to / "test").exists() and not lines_of(to)["validation"]  # the earlier's, gone
    new = json.loads((to / MARKER).read_text())["files"]
    assert set(files) == {*new, MARKER, *USER}


def test_a_file_the_new_export_writes_refuses_it(run, tmp_path: Path) -> None:
    to = tmp_path / "sets" / "set"
    _export(to, "--validation-fraction", "0")
    (to / "validation").mkdir()
    (to / "validation" / "part-00000.jsonl").write_text("my own\n")
    before = _files(to)
    res = CliRunner().invoke(cli, ["export", "--to", str(to), "--validation-fraction", "0.5"])
    assert res.exit_code == 1 and "validation/part-00000.jsonl was not written by the " \
        "earlier export" in res.output, res.output
    assert _files(to) == before
    assert [p.name for p in to.parent.iterdir()] == ["set"]  # no partial left beside it


def test_a_kill_after_the_swap_loses_nothing(run, tmp_path: Path, monkeypatch) -> None:
    to = tmp_path / "sets" / "set"
    _export(to, "--validation-fraction", "0")
    (to / "LICENSE").write_text("mine\n")
    (to / ".git").mkdir()
    (to / ".git" / "HEAD").write_text("ref\n")

    class Killed(BaseException):
        pass

    def killed(*_a: object) -> None:
        raise Killed  # as a kill between the swap and the move back

    monkeypatch.setattr(publish, "_move", killed)
    with pytest.raises(Killed):
        CliRunner().invoke(cli, ["export", "--to", str(to)], catch_exceptions=False)
    assert not (to / "LICENSE").exists()  # still in the export set aside
    monkeypatch.undo()
    monkeypatch.setenv("ONSEI_OUTPUT_URL", run.output_url)
    out = _export(to)
    assert "left by a killed export: moved .git, LICENSE" in out, out
    assert (to / "LICENSE").read_text() == "mine\n" and (to / ".git" / "HEAD").exists()
    assert [p.name for p in to.parent.iterdir()] == ["set"]


def test_an_export_without_a_manifest(run, tmp_path: Path) -> None:
    """An export made before manifests: its card, split folders and tars are its own."""
    to = tmp_path / "sets" / "set"
    _export(to)
    marker = json.loads((to / MARKER).read_text())
    (to / MARKER).write_text(json.dumps({k: marker[k] for k in ("export_id", "created_at")}))
    (to / "LICENSE").write_text("mine\n")
    (to / "train" / "old-part.jsonl").write_text("{}\n")
    _export(to)
    assert (to / "LICENSE").read_text() == "mine\n"
    assert not (to / "train" / "old-part.jsonl").exists()


def test_s3_keeps_what_no_export_wrote(make_settings, s3_bucket: str) -> None:
    root = f"s3://{s3_bucket}/run"
    s = make_settings(output_url=root)
    write_run(open_store(root, s), s, default_run(files_per_shard=1, shards=1))
    from services.ops.export.run import export
    from services.ops.export.write import SplitPlan

    to = f"s3://{s3_bucket}/sets/v1"
    plan = SplitPlan(validation_fraction=0.0)
    export(s, root, to, plan=plan, part_bytes=1)  # a part per line
    target = open_store(to, s)
    assert "train/part-00002.jsonl" in set(target.list(""))
    target.write_bytes("LICENSE", b"mine")
    target.write_bytes("train/NOTES.txt", b"mine")
    export(s, root, to, plan=plan)
    keys = sorted(target.list(""))
    assert keys == [MARKER, "LICENSE", "README.md", "train/NOTES.txt", "train/part-00000.jsonl"]
    assert json.loads(target.read_bytes(MARKER))["files"] == ["README.md",
                                                              "train/part-00000.jsonl"]
