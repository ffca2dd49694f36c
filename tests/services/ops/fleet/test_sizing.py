"""`onsei fleet --suggest`: node counts that balance the stages' measured rates, from done
records; SkyPilot (the fake client) is never asked to launch or cancel anything."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from services.ops.fleet.sizing import StageRate, balance, measured_rates, pipeline_rate
from services.stages import open_ledger
from tests.services.ops.fleet.fake_sky import FakeSky


def _rates(asr: float | None, enhance: float | None, tokenize: float | None) -> list[StageRate]:
    return [StageRate("asr", asr), StageRate("enhance", enhance),
            StageRate("tokenize", tokenize)]


def test_balance_is_proportional_to_node_seconds_per_shard() -> None:
    rates = _rates(50.0, 20.0, 10.0)  # node-seconds one shard costs each stage
    nodes = balance(rates, 80)
    assert nodes == {"asr": 50, "enhance": 20, "tokenize": 10}
    # balanced: every fleet does the same shards per hour
    assert {s: nodes[s] * 3600 / r.node_seconds_per_shard
            for s, r in zip(nodes, rates)} == pytest.approx(
        {"asr": 3600.0, "enhance": 3600.0, "tokenize": 3600.0})
    assert pipeline_rate(rates, nodes) == pytest.approx(3600.0)
    # an unbalanced fleet of the same size is slower: its slowest stage sets the pace
    assert pipeline_rate(rates, {"asr": 40, "enhance": 20, "tokenize": 20}) == pytest.approx(
        2880.0)


def test_balance_rounds_to_the_total_and_keeps_one_each() -> None:
    nodes = balance(_rates(100.0, 3.0, 1.0), 7)
    assert sum(nodes.values()) == 7 and min(nodes.values()) >= 1 and nodes["asr"] == 5
    assert balance(_rates(5.0, None, 1.0), 12) == {"asr": 10, "enhance": 0, "tokenize": 2}
    assert balance(_rates(None, None, None), 10) == {"asr": 0, "enhance": 0, "tokenize": 0}
    assert sum(balance(_rates(1.0, 1.0, 1.0), 2).values()) == 3  # one each at least


def _fill(s, walls: dict[str, float], n: int = 30) -> None:
    led = open_ledger(s)
    for stage, wall in walls.items():
        for i in range(n):
            led.mark_done(stage, i, {"wall_seconds": wall, "audio_seconds_out": 600.0,
                                     "node": {"type": "L4", "price_per_hour": 0.3, "gpus": 1,
                                              "parallel_shards": 2}})


def test_rates_come_from_done_records(make_settings) -> None:
    s = make_settings()
    _fill(s, {"asr": 100.0, "tokenize": 20.0})
    rates = {r.stage: r for r in measured_rates(s, sample=10)}  # a sample of the 30
    assert rates["asr"].node_seconds_per_shard == pytest.approx(50.0)  # 2 shards at once
    assert rates["tokenize"].node_seconds_per_shard == pytest.approx(10.0)
    assert rates["enhance"].node_seconds_per_shard is None
    assert rates["asr"].price_per_node_hour == pytest.approx(0.3)


def test_cli_suggests_without_touching_skypilot(make_settings, tmp_path, monkeypatch) -> None:
    from services.ops.fleet import cli

    s = make_settings()
    _fill(s, {"asr": 100.0, "enhance": 40.0, "tokenize": 20.0})  # 50 : 20 : 10 node-s
    monkeypatch.setattr("services.stages.PipelineSettings", lambda: s)
    sky = FakeSky()
    monkeypatch.setattr("services.ops.fleet.sky.SkyCliClient", lambda *a, **k: sky)
    cfg = tmp_path / "fleet.yaml"
    cfg.write_text("targets:\n"
                   "  asr: {template: a.yaml, backlog: {queue: asr, max: 40}}\n"
                   "  enhance: {template: e.yaml, count: 20}\n"
                   "  tokenize: {template: t.yaml, count: 20}\n")
    res = CliRunner().invoke(cli.fleet, ["--config", str(cfg), "--suggest"])
    assert res.exit_code == 0, res.output
    rows = {ln.split()[0]: ln.split() for ln in res.output.splitlines()[1:4]}
    assert rows["asr"][3:5] == ["40", "50"]  # now, suggested: the 80 nodes re-split
    assert rows["enhance"][4] == "20" and rows["tokenize"][4] == "10"
    assert rows["asr"][5] == "15.00"  # 50 nodes x $0.30
    assert "3,600 shards/h suggested vs 2,880 shards/h now" in res.output
    res = CliRunner().invoke(cli.fleet, ["--config", str(cfg), "--suggest", "--total", "16"])
    rows = {ln.split()[0]: ln.split() for ln in res.output.splitlines()[1:4]}
    assert [rows[x][4] for x in ("asr", "enhance", "tokenize")] == ["10", "4", "2"]
    assert sky.launches == [] and sky.cancels == []
