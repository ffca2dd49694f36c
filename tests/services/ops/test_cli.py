"""``onsei --help`` as an installed package answers it: from a directory outside the checkout,
where only what the package holds can be imported (``bench`` is not packaged)."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
BIN = Path(sys.executable).parent


def _run(args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess:
    full = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | env
    return subprocess.run(args, cwd=cwd, env=full, capture_output=True, text=True, timeout=120,
                          check=False)


def _bench_importable(cwd: Path, **env: str) -> bool:
    code = "import importlib.util as u; print(u.find_spec('bench') is not None)"
    res = _run([sys.executable, "-c", code], cwd, **env)
    return res.stdout.strip() == "True"


def test_help_from_outside_the_checkout(tmp_path) -> None:
    res = _run([str(BIN / "onsei"), "--help"], tmp_path)
    assert res.returncode == 0, res.stdout + res.stderr
    for name in ("config", "run", "status", "dedup", "export", "report"):
        assert f"\n  {name} " in res.stdout, res.stdout
    assert ("\n  bench " in res.stdout) == _bench_importable(tmp_path), res.stdout
    assert _run([str(BIN / "enqueue-shards"), "--help"], tmp_path).returncode == 0


def test_bench_without_the_checkout_says_where_it_is(tmp_path) -> None:
    if _bench_importable(tmp_path):
        pytest.skip("this environment imports bench from anywhere")
    res = _run([str(BIN / "onsei"), "bench"], tmp_path)
    assert res.returncode == 1 and "Traceback" not in res.stderr, res.stderr
    assert "`onsei bench` is not available" in res.stderr and "python -m bench" in res.stderr


@pytest.mark.slow
def test_help_from_the_built_wheel(tmp_path) -> None:
    """The wheel pip would install, unpacked and imported ahead of the checkout's install."""
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w",
                            str(tmp_path / "dist"), str(REPO)], capture_output=True, text=True,
                           timeout=600, check=False)
    assert built.returncode == 0, built.stderr[-2000:]
    (wheel,) = (tmp_path / "dist").glob("onsei-*.whl")
    with zipfile.ZipFile(wheel) as z:
        z.extractall(tmp_path / "site")
    cwd = tmp_path / "elsewhere"
    cwd.mkdir()
    site = str(tmp_path / "site")
    check = _run([sys.executable, "-c", "import services; print(services.__file__)"], cwd,
                 PYTHONPATH=site)
    assert check.stdout.startswith(site), check.stdout + check.stderr
    res = _run([sys.executable, "-m", "services.ops.cli", "--help"], cwd, PYTHONPATH=site)
    assert res.returncode == 0 and "\n  status " in res.stdout, res.stdout + res.stderr
    assert "\n  bench " not in res.stdout


_EVERY_H = """
import click
from click.testing import CliRunner
from services.ops.cli import cli

def paths(group, ctx, prefix):
    yield prefix
    for name in group.list_commands(ctx):
        cmd = group.get_command(ctx, name)
        if isinstance(cmd, click.Group):
            yield from paths(cmd, click.Context(cmd, parent=ctx, info_name=name), [*prefix, name])
        elif cmd is not None:
            yield [*prefix, name]

seen = list(paths(cli, click.Context(cli, info_name="onsei"), []))
assert ["status"] in seen and ["export"] in seen and len(seen) > 12, seen
for path in seen:
    res = CliRunner().invoke(cli, [*path, "-h"])
    assert res.exit_code == 0 and "Usage:" in res.output, (path, res.output)
print(len(seen), "ok")
"""


def test_dash_h_is_help_everywhere(tmp_path) -> None:
    """``onsei -h``, ``onsei status -h`` and every (sub)command's ``-h``: its help, exit 0. In a
    fresh interpreter, as a user's shell runs it: click caches a command's help option the first
    time it builds it, and another test may have invoked a subcommand on its own before."""
    res = _run([sys.executable, "-c", _EVERY_H], REPO, PYTHONPATH=str(REPO))
    assert res.returncode == 0 and res.stdout.strip().endswith("ok"), res.stdout + res.stderr
    res = _run([str(BIN / "onsei"), "status", "-h"], tmp_path, PYTHONPATH=str(REPO))
    assert res.returncode == 0 and "Usage: onsei status" in res.stdout, res.stdout + res.stderr
