"""The real SkyPilot client against a stand-in `sky` executable (argument lists, table parsing),
the Redis backlog reader against real Redis, and `onsei fleet --dry-run`."""

from __future__ import annotations

import json
import stat
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from services.ops.fleet.backlog import redis_backlog
from services.ops.fleet.sky import SkyCliClient, parse_queue_table

QUEUE_OUT = """Fetching managed job statuses...
Managed jobs
In progress tasks: 2 RUNNING, 1 RECOVERING
ID  TASK  NAME               REQUESTED  SUBMITTED   TOT. DURATION  JOB DURATION  #RECOVERIES  STATUS      INFRA
7   -     asr-0a1b2c3d       1x[L4:1]   2 mins ago  2m 3s          1m 10s        0            RUNNING     AWS (us-east-1)
6   -     asr-99aa00ff       1x[L4:1]   1 hr ago    1h 2m          58m           1            RECOVERING  -
5   -     tokenize-12345678  1x[L4:1]   1 hr ago    1h 2m          58m           0            STARTING    GCP (us-central1)
"""


def _fake_sky(tmp_path: Path) -> tuple[str, Path]:
    log = tmp_path / "calls.jsonl"
    exe = tmp_path / "sky"
    exe.write_text(f"""#!{sys.executable}
import json, os, sys
with open({str(log)!r}, "a") as f:
    f.write(json.dumps({{"argv": sys.argv[1:],
                        "broker": os.environ.get("ONSEI_BROKER_URL")}}) + "\\n")
if sys.argv[1:3] == ["jobs", "queue"]:
    sys.stdout.write({QUEUE_OUT!r})
""")
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    return str(exe), log


def test_parse_queue_table() -> None:
    jobs = parse_queue_table(QUEUE_OUT)
    assert [(j.job_id, j.name, j.status, j.cloud) for j in jobs] == [
        (7, "asr-0a1b2c3d", "RUNNING", "aws"), (6, "asr-99aa00ff", "RECOVERING", None),
        (5, "tokenize-12345678", "STARTING", "gcp")]
    assert all(j.active for j in jobs)
    assert parse_queue_table("No in-progress managed jobs.") == []


def test_cli_client_argument_lists(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    exe, log = _fake_sky(tmp_path)
    monkeypatch.setenv("ONSEI_BROKER_URL", "redis://:pw@h/0")
    client = SkyCliClient(exe)
    assert len(client.queue()) == 3
    client.launch("deploy/skypilot/asr.yaml", "asr-0a1b2c3d; rm -rf /", gpus="L4:1", cloud="gcp",
                  env=["ONSEI_BROKER_URL"])
    client.cancel([7, 6])
    calls = [json.loads(x) for x in log.read_text().splitlines()]
    assert calls[0]["argv"] == ["jobs", "queue", "--skip-finished"]
    launch = calls[1]["argv"]
    assert launch[:2] == ["jobs", "launch"] and launch[-1] == "deploy/skypilot/asr.yaml"
    assert "asr-0a1b2c3d; rm -rf /" in launch  # one argument, never parsed by a shell
    i = launch.index("--env")
    assert launch[i + 1] == "ONSEI_BROKER_URL"  # the name only: the value stays in the env
    assert not any("pw" in a for a in launch) and calls[1]["broker"] == "redis://:pw@h/0"
    assert launch[launch.index("--cloud") + 1] == "gcp"
    assert calls[2]["argv"] == ["jobs", "cancel", "--yes", "7", "6"]


def test_redis_backlog_counts_waiting_and_in_flight(private_redis_url: str) -> None:
    import redis

    r = redis.Redis.from_url(private_redis_url)
    r.rpush("asr", *[b"m"] * 5)
    r.rpush("asr\x06\x163", b"m")  # a priority sub-queue
    r.rpush("tokenize", b"m")
    r.hset("unacked", "tag1", json.dumps([{"body": "x"}, "asr", "asr"]))
    r.hset("unacked", "tag2", json.dumps([{"body": "x"}, "tokenize", "tokenize"]))
    backlog = redis_backlog(private_redis_url)
    assert backlog("asr") == 7 and backlog("tokenize") == 2 and backlog("enhance") == 0


def test_fleet_cli_dry_run(tmp_path: Path, private_redis_url: str,
                           monkeypatch: pytest.MonkeyPatch) -> None:
    import redis

    redis.Redis.from_url(private_redis_url).rpush("asr", *[b"m"] * 45)
    exe, log = _fake_sky(tmp_path)
    monkeypatch.setenv("ONSEI_BROKER_URL", private_redis_url)
    from services.ops.cli import cli

    repo = Path(__file__).resolve().parents[4]
    monkeypatch.chdir(repo)
    res = CliRunner().invoke(cli, ["fleet", "--config", "deploy/fleet.yaml", "--dry-run",
                                   "--sky", exe])
    assert res.exit_code == 0, res.output
    # asr: backlog 45 / 20 -> 3 wanted, 2 active (running + recovering) -> 1 would launch
    assert "asr: 2/3" in res.output and "would launch asr-" in res.output
    assert "enhance: 0/0" in res.output
    argvs = [json.loads(x)["argv"][:2] for x in log.read_text().splitlines()]
    assert argvs == [["jobs", "queue"]]  # a dry run launches nothing
