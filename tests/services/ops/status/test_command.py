"""onsei status: ledger counts and hours; Redis queue state when there is one."""

from __future__ import annotations

import json
import time

from click.testing import CliRunner

from common.ledger.store import Ledger
from common.queue.publish import publish_shards
from common.queue.tracking import Tracker
from common.storage import open_store
from services.ops.status.command import collect, status
from services.stages import PIPELINE, make_app


def _fill(s) -> None:
    led = Ledger(open_store(s.output_url, s), s, PIPELINE)
    for i in range(3):
        led.mark_done("asr", i, {"audio_seconds_in": 1800.0, "audio_seconds_out": 900.0,
                                 "wall_seconds": 10.0 + i})
    led.mark_failed("enhance", 1, "ShardError: corrupt tar", "tb", attempts=3, dead=True)


def test_from_the_ledger_alone_when_redis_is_down(make_settings) -> None:
    s = make_settings(broker_url="redis://127.0.0.1:1/0")
    _fill(s)
    d = collect(s, range(10))
    asr = d["stages"]["asr"]
    assert d["redis"] is False and asr["queued"] is None
    assert asr["done"] == 3 and asr["audio_hours_in"] == 1.5 and asr["audio_hours_out"] == 0.75
    assert asr["last_hour"]["shards"] == 3 and asr["slowest"][0]["shard_id"] == 2
    enh = d["stages"]["enhance"]
    assert enh["dead_lettered"] == 1 and "corrupt tar" in enh["failures"][0]["reason"]
    assert collect(s, range(5, 10))["stages"]["asr"]["done"] == 0


def test_queue_state_from_redis(make_settings, private_redis_url, monkeypatch) -> None:
    s = make_settings(broker_url=private_redis_url)
    _fill(s)
    publish_shards(make_app("onsei", s), "enhance", [0, 2], "tokenize")
    Tracker(s).start("asr", 7, 60)
    d = collect(s)
    assert d["stages"]["enhance"]["queued"] == 2 and d["stages"]["asr"]["running"] == 1
    monkeypatch.setattr("services.ops.status.command.PipelineSettings", lambda: s)
    res = CliRunner().invoke(status, ["--json"])
    assert json.loads(res.output)["stages"]["enhance"]["queued"] == 2
    res = CliRunner().invoke(status, ["--range", "0-3"])
    assert res.exit_code == 0 and "corrupt tar" in res.output and "enhance" in res.output
    assert time.time() > 0


def test_a_corrupt_rollup_never_changes_the_counts(make_settings, tmp_path) -> None:
    from common.ledger import rollup

    s = make_settings(broker_url="redis://127.0.0.1:1/0")
    led = Ledger(open_store(s.output_url, s), s, PIPELINE)
    for i in range(12):
        led.mark_done("asr", i, {"audio_seconds_in": 3600.0, "wall_seconds": 1.0})
    assert collect(s)["stages"]["asr"]["done"] == 12  # writes the rollup of block 0
    led.store.write_bytes(rollup.rollup_key(led, "asr", 0), b"\x00garbage")
    other = make_settings(broker_url="redis://127.0.0.1:1/0",
                          scratch_dir=str(tmp_path / "other-machine"))
    asr = collect(other)["stages"]["asr"]
    assert asr["done"] == 12 and asr["audio_hours_in"] == 12.0


def test_corrupt_records_are_reported_never_counted(make_settings, monkeypatch) -> None:
    """A failure record `null`, done records `[1,2]`, `"lots"` and `1e308` hours: status and
    report say which, count none of them, and never raise."""
    from services.ops.report.collect import collect as report_collect

    s = make_settings(broker_url="redis://127.0.0.1:1/0")
    _fill(s)
    led = Ledger(open_store(s.output_url, s), s, PIPELINE)
    led.store.write_bytes(led.failed_key("enhance", 2), b"null")
    led.store.write_bytes(led.done_key("asr", 3), b"[1,2]")
    led.store.write_bytes(led.done_key("asr", 4), json.dumps(
        {"stage": "asr", "shard_id": 4, "audio_seconds_in": "lots"}).encode())
    led.store.write_bytes(led.done_key("asr", 5), json.dumps(
        {"stage": "asr", "shard_id": 5, "audio_seconds_in": 1e308}).encode())
    d = collect(s, range(10))
    asr, enh = d["stages"]["asr"], d["stages"]["enhance"]
    assert asr["done"] == 3 and asr["audio_hours_in"] == 1.5
    assert [c["shard_id"] for c in asr["corrupt"]] == [3, 4, 5]
    assert enh["failed"] == 1 and len(enh["corrupt"]) == 1
    assert "_failed" in enh["corrupt"][0]["key"]
    monkeypatch.setattr("services.ops.status.command.PipelineSettings", lambda: s)
    res = CliRunner().invoke(status, ["--range", "0-9"])
    assert res.exit_code == 0, res.output
    assert "asr shard 3: corrupt record, not counted" in res.output
    data = report_collect(s.output_url, s)
    assert data.stages["asr"].done == 3 and data.stages["asr"].seconds_in == 5400.0
    assert sum("corrupt record" in u for u in data.unreadable) == 4


def test_output_option_names_the_root_to_report_on(make_settings, tmp_path) -> None:
    s = make_settings(broker_url="redis://127.0.0.1:1/0")
    _fill(s)
    env = {"ONSEI_OUTPUT_URL": str(tmp_path / "elsewhere"),
           "ONSEI_BROKER_URL": s.broker_url.get_secret_value()}
    res = CliRunner().invoke(status, ["--output", s.output_url, "--json"], env=env)
    assert res.exit_code == 0, res.output
    d = json.loads(res.output)
    assert d["output"] == s.output_url and d["stages"]["asr"]["done"] == 3
