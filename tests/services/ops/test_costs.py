"""Cost per output hour, GPU-hours and the projection to finish (services/ops/costs.py), as
`onsei status` and `onsei report` show them."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from common.ledger.pack import Trimmed, trim
from common.ledger.records import DoneRecord
from services.ops.costs import projection, render_lines, stage_costs, summary
from services.stages import open_ledger

NOW = 1_000_000.0


def _rec(stage: str, i: int, wall: float, price: float | None, out_s: float,
         age: float = 60.0, gpus: int = 1, parallel: int = 1) -> Trimmed:
    return trim(DoneRecord.from_dict({
        "stage": stage, "shard_id": i, "wall_seconds": wall, "audio_seconds_in": 3600.0,
        "audio_seconds_out": out_s, "finished_at": NOW - age,
        "node": {"type": "L4", "pricing": "spot", "price_per_hour": price, "gpus": gpus,
                 "parallel_shards": parallel}}))


def _records() -> dict[str, list[Trimmed]]:
    # 4 shards done: asr 360 s each on a $1/h node with 2 shards at once (0.05 node-h each);
    # enhance 720 s on $2/h; tokenize 180 s on $1/h; each keeps half an hour of audio.
    return {
        "asr": [_rec("asr", i, 360.0, 1.0, 1800.0, parallel=2) for i in range(4)],
        "enhance": [_rec("enhance", i, 720.0, 2.0, 1800.0) for i in range(4)],
        "tokenize": [_rec("tokenize", i, 180.0, 1.0, 1800.0) for i in range(4)],
    }


def test_per_stage_and_total(make_settings) -> None:
    s = make_settings()
    block = summary(_records(), s, now=NOW)
    asr, enh, tok = (block["stages"][x] for x in ("asr", "enhance", "tokenize"))
    assert asr["gpu_hours"] == pytest.approx(0.2) and asr["cost"] == pytest.approx(0.2)
    assert asr["node_seconds_per_shard"] == 180.0  # half of the 360 s wall
    assert enh["cost"] == pytest.approx(1.6) and enh["cost_per_output_hour"] == pytest.approx(0.8)
    assert tok["cost"] == pytest.approx(0.2)
    total = block["total"]
    assert total["gpu_hours"] == pytest.approx(0.2 + 0.8 + 0.2)
    assert total["output_hours"] == 2.0  # tokenize's hours out: what the run ends with
    assert total["cost"] == pytest.approx(2.0) and total["cost_per_output_hour"] == 1.0
    assert block["projection"] is None


def test_projection_uses_the_last_hours_rate() -> None:
    recs = _records()
    recs["asr"].append(_rec("asr", 9, 360.0, 1.0, 1800.0, age=7200.0, parallel=2))  # old one
    costs = stage_costs(recs, _settings(), now=NOW)
    p = projection(costs, total_shards=100)
    assert p["stages"]["asr"]["shards_left"] == 95
    assert p["stages"]["asr"]["hours_left"] == pytest.approx(95 / 4)  # 4 in the last hour
    assert p["stages"]["enhance"]["cost_to_finish"] == pytest.approx(96 * 0.4)
    assert p["hours_left"] == pytest.approx(96 / 4)  # the slowest stage bounds the run
    assert p["cost_to_finish"] == pytest.approx(95 * 0.05 + 96 * 0.4 + 96 * 0.05)


def test_unknown_price_is_shown_as_unknown() -> None:
    recs = _records()
    assert recs["enhance"][0].node is not None
    recs["enhance"][0].node["price_per_hour"] = None
    block = summary(recs, _settings(), total_shards=10, now=NOW)
    assert block["stages"]["enhance"]["cost"] is None and block["total"]["cost"] is None
    assert block["projection"]["cost_to_finish"] is None
    assert block["stages"]["asr"]["cost"] == pytest.approx(0.2)  # the others still priced
    text = "\n".join(render_lines(block))
    assert "ONSEI_NODE_TYPE" in text and "to finish 10 shards" in text


def _settings():
    from common.settings import Settings

    return Settings()


def _fill_ledger(s) -> None:
    led = open_ledger(s)
    for stage, recs in _records().items():
        for r in recs:
            led.mark_done(stage, r.shard_id, {
                "wall_seconds": r.wall_seconds, "audio_seconds_in": r.audio_seconds_in,
                "audio_seconds_out": r.audio_seconds_out, "node": r.node})


def test_status_shows_cost_and_projection(make_settings, monkeypatch) -> None:
    from services.ops.status.command import collect, status

    s = make_settings(broker_url="redis://127.0.0.1:1/0")
    _fill_ledger(s)
    d = collect(s, range(10))
    assert d["cost"]["total"]["cost_per_output_hour"] == 1.0
    assert d["cost"]["projection"]["stages"]["tokenize"]["shards_left"] == 6
    monkeypatch.setattr("services.ops.status.command.PipelineSettings", lambda: s)
    res = CliRunner().invoke(status, ["--range", "0-9"])
    assert res.exit_code == 0, res.output
    assert "$/output-h" in res.output and "to finish 10 shards" in res.output
    assert "$1.00" in res.output  # the total cost per output hour


def test_report_shows_cost_and_projection(make_settings, tmp_path, monkeypatch) -> None:
    from services.ops.report.cli import report

    s = make_settings()
    _fill_ledger(s)
    for k, v in {"ONSEI_OUTPUT_URL": s.output_url, "ONSEI_SCRATCH_DIR": s.scratch_dir}.items():
        monkeypatch.setenv(k, v)
    html = tmp_path / "r.html"
    res = CliRunner().invoke(report, ["--json", "--range", "0-99", "--html", str(html)])
    assert res.exit_code == 0, res.output
    cost = json.loads(res.output[: res.output.rindex("}") + 1])["cost"]
    assert cost["total"]["cost"] == pytest.approx(2.0)
    assert cost["projection"]["stages"]["asr"]["shards_left"] == 96
    page = html.read_text()
    assert "<h2>Cost</h2>" in page and 'id="projection"' in page and "To finish 100" in page
