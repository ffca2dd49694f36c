"""The stages' deploy entries are what their specs make (`onsei deploy`): the checked-in files
match, a drifted file is found and rewritten, and a stage added from its own package gets its
image, SkyPilot task and compose service with no file edited by hand."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import yaml
from click.testing import CliRunner

from services.ops.deploy.cli import deploy, planned
from tests.services.test_pipeline import LINE, toy_package

REPO = Path(__file__).resolve().parents[2]


def _copy(tmp: Path) -> Path:
    root = tmp / "checkout"
    shutil.copytree(REPO / "deploy", root / "deploy")
    shutil.copy(REPO / "docker-compose.yml", root)
    return root


def test_checked_in_entries_are_the_specs() -> None:
    stale = [str(p) for p, text in planned(REPO).items() if p.read_text() != text]
    assert stale == []  # else: `onsei deploy --write`, and commit what it wrote
    assert {p.name for p in planned(REPO)} >= {"Dockerfile.asr", "enhance.yaml",
                                                "docker-compose.yml"}


def test_a_drifted_entry_is_found_then_written(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    sky = root / "deploy/skypilot/tokenize.yaml"
    sky.write_text(sky.read_text().replace('".[tokenize]"', '".[asr]"'))
    res = CliRunner().invoke(deploy, ["--check", "--root", str(root)])
    assert res.exit_code == 1 and f"differs: {sky}" in res.output, res.output
    assert CliRunner().invoke(deploy, ["--write", "--root", str(root)]).exit_code == 0
    assert sky.read_text() == (REPO / "deploy/skypilot/tokenize.yaml").read_text()
    assert CliRunner().invoke(deploy, ["--check", "--root", str(root)]).exit_code == 0


def test_compose_without_markers_is_refused(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    (root / "docker-compose.yml").write_text("services: {}\n")
    res = CliRunner().invoke(deploy, ["--root", str(root)])
    assert res.exit_code == 1 and "no stage markers" in res.output


def test_a_new_stage_gets_its_entries_from_its_spec(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    pkg = toy_package(tmp_path / "ext")
    env = {**os.environ, "ONSEI_PIPELINE": LINE, "PYTHONPATH": f"{pkg}{os.pathsep}{REPO}"}
    res = subprocess.run([sys.executable, "-m", "services.ops.cli", "deploy", "--write",
                          "--root", str(root)], env=env, capture_output=True, text=True,
                         timeout=120, check=False)
    assert res.returncode == 0, res.stderr
    wrote = {Path(x.removeprefix("wrote: ")).relative_to(root).as_posix()
             for x in res.stdout.splitlines() if x.startswith("wrote: ")}
    assert wrote == {"deploy/docker/Dockerfile.toy", "deploy/skypilot/toy.yaml",
                     "docker-compose.yml"}, res.stdout
    assert "deploy/fleet.yaml has no target 'toy'" in res.stdout
    fleet = (root / "deploy/fleet.yaml").read_text()  # the printed target, added by hand
    target = yaml.safe_load(fleet + res.stdout.split("under targets:\n", 1)[1])
    assert target["targets"]["toy"]["template"] == "deploy/skypilot/toy.yaml"
    assert target["targets"]["toy"]["env"] == target["targets"]["asr"]["env"]

    docker = (root / "deploy/docker/Dockerfile.toy").read_text()
    assert re.search(r"^FROM nvidia/cuda:\S+-runtime-ubuntu", docker, re.MULTILINE)
    assert 'pip install "." &&' in docker and "COPY toyext ./toyext" in docker
    assert 'CMD ["celery", "-A", "toyext.toy", "worker", "-Q", "toy"' in docker
    task = yaml.safe_load((root / "deploy/skypilot/toy.yaml").read_text())
    assert task["name"] == "onsei-toy" and task["envs"]["ONSEI_BROKER_URL"] is None
    assert "celery -A toyext.toy worker -Q toy" in task["run"]
    services = yaml.safe_load((root / "docker-compose.yml").read_text())["services"]
    names = [n for n in services if n in ("asr", "toy", "enhance", "tokenize")]
    assert names == ["asr", "toy", "enhance", "tokenize"]  # in pipeline order
    toy = services["toy"]
    assert toy["command"][:6] == ["celery", "-A", "toyext.toy", "worker", "-Q", "toy"]
    assert toy["build"]["dockerfile"] == "deploy/docker/Dockerfile.toy"
    assert toy["ports"] == ["127.0.0.1:${ONSEI_TOY_METRICS_HOST_PORT:-9231}:9200"]
    assert services["asr"] == yaml.safe_load(
        (REPO / "docker-compose.yml").read_text())["services"]["asr"]
