"""A user and password in a storage URL (``s3://KEY:SECRET@bucket/out``): every ``onsei``
command that takes the output root says why it cannot be used, never printing the password,
whether the URL comes from ``ONSEI_OUTPUT_URL`` or ``--output``; and every message a command
ends with passes the masks, even one that quotes the password away from its URL."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from common.storage import StorageError
from tests.conftest import free_port

SECRET = "Pw" + uuid.uuid4().hex[:10]
URL = f"s3://AKIAEXAMPLE:{SECRET}@bucket/out"
COMMANDS = {"status": [], "report": [], "dedup": [], "export": ["--to", "EXPORT"]}


def _onsei(args: list[str], tmp_path: Path, env: dict[str, str]) -> str:
    """The installed console script, as an operator runs it, from outside the checkout."""
    script = Path(sys.executable).parent / "onsei"
    full = {**os.environ, "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_EC2_METADATA_DISABLED": "true", "ONSEI_SCRATCH_DIR": str(tmp_path / "scratch"),
            # nothing listens there: no request leaves this machine
            "ONSEI_S3_ENDPOINT_URL": f"http://127.0.0.1:{free_port()}",
            "ONSEI_BROKER_URL": f"redis://127.0.0.1:{free_port()}/0", **env}
    res = subprocess.run([str(script), *args], cwd=tmp_path, env=full, capture_output=True,
                         text=True, timeout=120, check=False)
    assert res.returncode == 1, res.stdout + res.stderr
    return res.stdout + res.stderr


@pytest.mark.parametrize("given", ["env", "option"])
@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_password_in_the_output_url_is_never_printed(tmp_path, command, given) -> None:
    extra = [str(tmp_path / a) if a == "EXPORT" else a for a in COMMANDS[command]]
    if given == "env":
        out = _onsei([command, *extra], tmp_path, {"ONSEI_OUTPUT_URL": URL})
    else:
        out = _onsei([command, "--output", URL, *extra], tmp_path, {})
    assert SECRET not in out and "Traceback" not in out, out
    assert "s3://***@bucket/out: an s3:// URL takes no user or password" in out, out
    assert "AKIAEXAMPLE" not in out, out
    assert len([ln for ln in out.splitlines() if ln.strip()]) == 1, out


@click.command("fails")
def fails() -> None:
    """A command ending with a storage error that quotes the URL's userinfo without its scheme,
    as boto3 quotes a bucket name."""
    raise StorageError(f'LIST failed: Invalid bucket name "AKIAEXAMPLE:{SECRET}@bucket"')


@click.command("refuses")
@click.argument("url")
def refuses(url: str) -> None:
    """A command refusing a URL it was given, quoting it."""
    raise click.BadParameter(f"cannot use {url}")


def test_every_ending_message_is_masked(monkeypatch) -> None:
    from services.ops import cli as cli_mod

    monkeypatch.setenv("ONSEI_INPUT_URL", URL)  # a setting that is no secret, holding one
    monkeypatch.setitem(cli_mod.SUBCOMMANDS, "fails", f"{__name__}:fails")
    monkeypatch.setitem(cli_mod.SUBCOMMANDS, "refuses", f"{__name__}:refuses")
    res = CliRunner().invoke(cli_mod.cli, ["fails"])
    assert res.exit_code == 1 and SECRET not in res.output, res.output
    assert 'Invalid bucket name "AKIAEXAMPLE:***@bucket"' in res.output, res.output
    other = "Zz" + uuid.uuid4().hex[:8]  # in no setting: the URL pattern finds it
    res = CliRunner().invoke(cli_mod.cli, ["refuses", f"s3://k:{other}@b/x"])
    assert res.exit_code == 2 and other not in res.output, res.output
    assert "cannot use s3://k:***@b/x" in res.output, res.output
