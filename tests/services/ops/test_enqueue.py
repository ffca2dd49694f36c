"""enqueue-shards: ledger reconciliation, queued-set skipping, force, dry run, counts."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest
import redis
from click.testing import CliRunner

from common.ledger.store import Ledger
from common.queue.publish import publish_shards
from common.queue.tracking import Tracker
from common.storage import open_store
from services.ops.enqueue import enqueue, main, parse_range
from services.stages import PIPELINE, make_app


def _ledger(s) -> Ledger:
    return Ledger(open_store(s.output_url, s), s, PIPELINE)


def _queued_args(url: str, queue: str) -> list[int]:
    import base64

    r = redis.Redis.from_url(url)
    return [json.loads(base64.b64decode(json.loads(m)["body"]))[0][0]
            for m in r.lrange(queue, 0, -1)][::-1]


def test_parse_range() -> None:
    assert parse_range("0-3") == range(4) and parse_range("7") == range(7, 8)
    assert parse_range("0-0") == range(1)


def test_parse_range_refuses_ids_no_worker_takes() -> None:
    top = 2**63 - 1
    assert parse_range(f"{top}") == range(top, top + 1)
    for text in (f"{top + 1}", f"{top - 1}-{top + 1}", str(10**30)):
        with pytest.raises(click.BadParameter, match="shard ids go up to"):
            parse_range(text)


def test_resumes_each_shard_at_its_first_missing_stage(make_settings, private_redis_url) -> None:
    s = make_settings(broker_url=private_redis_url)
    led = _ledger(s)
    for st in ("asr", "enhance", "tokenize"):
        led.mark_done(st, 0, {})  # shard 0: all done
    led.mark_done("asr", 1, {})  # shard 1: enhance message lost (e.g. Redis flushed)
    led.mark_failed("asr", 3, "boom", dead=True)  # shard 3: dead-lettered
    p = enqueue(s, range(5), "asr", "tokenize")
    assert p.to_enqueue == {"asr": [2, 4], "enhance": [1], "tokenize": []}
    assert (p.done, p.failed, p.enqueued) == (1, 1, 3)
    assert _queued_args(private_redis_url, "asr") == [2, 4]
    assert _queued_args(private_redis_url, "enhance") == [1]
    again = enqueue(s, range(5), "asr", "tokenize")  # messages on their way: nothing new
    assert again.enqueued == 0 and again.queued == 3
    retry = enqueue(s, range(3, 4), "asr", "tokenize", retry_failed=True)
    assert retry.to_enqueue["asr"] == [3]


def test_stale_queued_set_is_cleared_when_queue_is_empty(make_settings, private_redis_url) -> None:
    s = make_settings(broker_url=private_redis_url)
    publish_shards(make_app("onsei", s), "asr", [0, 1], "tokenize")
    redis.Redis.from_url(private_redis_url).delete("asr")  # e.g. `celery purge`
    assert Tracker(s).queued_ids("asr") == {0, 1}
    p = enqueue(s, range(2), "asr", "tokenize")
    assert p.to_enqueue["asr"] == [0, 1]


def test_later_stage_only_where_the_previous_is_done(make_settings, private_redis_url) -> None:
    s = make_settings(broker_url=private_redis_url)
    _ledger(s).mark_done("asr", 1, {})
    p = enqueue(s, range(3), "enhance", "tokenize")
    assert p.to_enqueue == {"enhance": [1], "tokenize": []} and p.waiting == 2
    forced = enqueue(s, range(3), "enhance", "enhance", force=True, dry_run=True)
    assert forced.to_enqueue["enhance"] == [1]


def test_force_and_dry_run(make_settings, private_redis_url) -> None:
    s = make_settings(broker_url=private_redis_url)
    _ledger(s).mark_done("asr", 0, {})
    dry = enqueue(s, range(3), "asr", "asr", dry_run=True)
    assert dry.to_enqueue["asr"] == [1, 2]
    assert redis.Redis.from_url(private_redis_url).llen("asr") == 0
    forced = enqueue(s, range(3), "asr", "asr", force=True)
    assert forced.to_enqueue["asr"] == [0, 1, 2]
    assert _queued_args(private_redis_url, "asr") == [0, 1, 2]


def test_cli_prints_counts(make_settings, private_redis_url, monkeypatch) -> None:
    s = make_settings(broker_url=private_redis_url)
    Path(s.input_url).mkdir(parents=True)
    _ledger(s).mark_done("asr", 1, {})
    monkeypatch.setattr("services.ops.enqueue.PipelineSettings", lambda: s)
    res = CliRunner().invoke(main, ["--range", "0-3", "--until", "asr"])
    assert res.exit_code == 0, res.output
    assert "enqueued 3 (asr=3); skipped 1 (done 1" in res.output
    res = CliRunner().invoke(main, ["--range", "0-3", "--until", "asr"])
    assert "enqueued 0" in res.output and "queued 3" in res.output
    bad = make_settings(broker_url="redis://127.0.0.1:1/0")
    monkeypatch.setattr("services.ops.enqueue.PipelineSettings", lambda: bad)
    res = CliRunner().invoke(main, ["--range", "0-1"])
    assert res.exit_code != 0 and "unreachable" in res.output


def test_cli_refuses_an_input_that_does_not_exist(make_settings, private_redis_url,
                                                  monkeypatch) -> None:
    s = make_settings(broker_url=private_redis_url, input_url="/nonexistent/raw")
    monkeypatch.setattr("services.ops.enqueue.PipelineSettings", lambda: s)
    res = CliRunner().invoke(main, ["--range", "0-3"])
    assert res.exit_code == 1 and res.output.strip() == \
        "Error: input /nonexistent/raw does not exist", res.output
    assert redis.Redis.from_url(private_redis_url).llen("asr") == 0  # nothing promised


def test_cli_refuses_an_unknown_until_stage(make_settings, private_redis_url, monkeypatch) -> None:
    s = make_settings(broker_url=private_redis_url)
    Path(s.input_url).mkdir(parents=True)
    for k, v in (("ONSEI_INPUT_URL", s.input_url), ("ONSEI_OUTPUT_URL", s.output_url),
                 ("ONSEI_BROKER_URL", private_redis_url), ("ONSEI_UNTIL", "tokenise")):
        monkeypatch.setenv(k, v)  # the settings check it as the command builds them
    res = CliRunner().invoke(main, ["--range", "0-3"])
    assert res.exit_code == 1 and res.output.strip() == (
        "Error: ONSEI_UNTIL: unknown stage 'tokenise': choose one of asr, enhance, tokenize")
    assert redis.Redis.from_url(private_redis_url).llen("asr") == 0


# --- a huge range is refused at once, with one clear line -------------------------------------
HUGE = "0-99999999999"


def test_huge_range_is_refused_by_every_command(tmp_path, monkeypatch) -> None:
    """enqueue-shards, onsei run and onsei status once built a set of every id (MemoryError
    at 2.4 GB). Now: exit 2 at once, naming the size and the setting."""
    from services.ops.run import run
    from services.ops.status.command import status

    monkeypatch.setenv("ONSEI_OUTPUT_URL", str(tmp_path / "out"))
    monkeypatch.setenv("ONSEI_INPUT_URL", str(tmp_path / "raw"))
    monkeypatch.setenv("ONSEI_BROKER_URL", "redis://127.0.0.1:1/0")  # never reached
    for cmd, args in ((main, ["--range", HUGE, "--dry-run"]), (run, ["--range", HUGE]),
                      (status, ["--range", HUGE])):
        res = CliRunner().invoke(cmd, args)
        assert res.exit_code == 2, (cmd.name, res.output)
        assert "names 100,000,000,000 shards, more than ONSEI_MAX_RANGE=1,000,000" in res.output
        assert not (tmp_path / "out").exists()  # refused before anything was read or written


def test_max_range_is_configurable() -> None:
    assert parse_range("0-9", max_ids=10) == range(10)
    import click
    import pytest

    with pytest.raises(click.BadParameter, match="names 11 shards, more than ONSEI_MAX_RANGE=10"):
        parse_range("0-10", max_ids=10)


def test_plan_streams_the_range(make_settings, private_redis_url) -> None:
    """Planning a million-shard range holds only what exists (done ids) and what it enqueues,
    never a set of the range."""
    import tracemalloc

    s = make_settings(broker_url=private_redis_url)
    _ledger(s).mark_done("asr", 5, {})
    tracemalloc.start()
    from services.ops.enqueue import plan

    p = plan(s, range(1_000_000), "enhance", "tokenize", False, False)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert p.to_enqueue["enhance"] == [5] and p.waiting == 999_999
    assert peak < 8 * 1024**2, peak  # a set of 1e6 ints alone is ~60 MB


def test_cli_says_which_shards_reach_tokenize_before_dedup_covers_them(
        make_settings, private_redis_url, monkeypatch) -> None:
    """Tokenize applies the dedup result and does not wait for it: enqueue-shards names the
    shards it sends towards tokenize that the result does not cover (the declared step)."""
    from tests.dedupfiles import write_result

    s = make_settings(broker_url=private_redis_url)
    Path(s.input_url).mkdir(parents=True)
    led = _ledger(s)
    for i in range(4):
        led.mark_done("asr", i, {})
        led.mark_done("enhance", i, {})
    monkeypatch.setattr("services.ops.enqueue.PipelineSettings", lambda: s)
    res = CliRunner().invoke(main, ["--range", "0-3", "--dry-run"])
    assert res.exit_code == 0, res.output
    assert ("dedup: 4 of the 4 shards enqueued reach tokenize before it covers them "
            "(`onsei dedup` once they are done at enhance; tokenize does not wait)") \
        in res.output
    write_result(led.store, {}, shards=[0, 1, 2])
    res = CliRunner().invoke(main, ["--range", "0-3", "--dry-run"])
    assert "dedup: 1 of the 4 shards enqueued" in res.output, res.output
    write_result(led.store, {}, shards=[0, 1, 2, 3])
    assert "dedup:" not in CliRunner().invoke(main, ["--range", "0-3", "--dry-run"]).output
    # a chain that stops before tokenize: nothing to say
    assert "dedup:" not in CliRunner().invoke(main, ["--range", "0-3", "--stage", "enhance",
                                                     "--until", "enhance", "--force",
                                                     "--dry-run"]).output


@pytest.mark.parametrize("text", [f"0-{10**30}", f"0-{2**63 - 1}", "5-" + "9" * 5000])
def test_a_huge_range_is_refused_before_any_number_overflows(text: str) -> None:
    with pytest.raises(click.BadParameter) as e:
        parse_range(text, 1_000_000)
    assert "shard ids go up to" in str(e.value) or "more than ONSEI_MAX_RANGE" in str(e.value)
    assert len(str(e.value)) < 300  # a 5,000-digit argument is not repeated whole
    with pytest.raises(click.BadParameter, match="first id is above its last"):
        parse_range("9-3")


def test_huge_ranges_through_the_commands(make_settings, clean_env) -> None:
    from services.ops.cli import cli

    for args in (["run", "--range", f"0-{10**30}", "--input", "x", "--output", "y"],
                 ["status", "--range", f"0-{2**63 - 1}"],
                 ["report", "--range", f"0-{2**63 - 1}", "--json"]):
        res = CliRunner().invoke(cli, args)
        assert res.exit_code == 2 and "Traceback" not in res.output, res.output
        assert "shard ids go up to" in res.output or "ONSEI_MAX_RANGE" in res.output
    res = CliRunner().invoke(main, ["--range", f"0-{10**30}", "--dry-run"])
    assert res.exit_code == 2 and "shard ids go up to" in res.output
