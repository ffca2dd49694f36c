"""onsei status: how far the dedup index is (enhanced shards its result covers)."""

from __future__ import annotations

import json

from click.testing import CliRunner

from common.ledger.store import Ledger
from common.storage import open_store
from services.dedup.result import SUMMARY_KEY
from services.ops.status.command import collect, status
from services.stages import PIPELINE
from tests.dedupfiles import write_result


def _settings(make_settings, enhanced: int):
    s = make_settings(broker_url="redis://127.0.0.1:1/0")
    store = open_store(s.output_url, s)
    led = Ledger(store, s, PIPELINE)
    for i in range(enhanced):
        led.mark_done("enhance", i, {"audio_seconds_in": 60.0, "wall_seconds": 1.0})
    return s, store


def test_index_progress_text_and_json(make_settings, monkeypatch) -> None:
    s, store = _settings(make_settings, 4)
    monkeypatch.setattr("services.ops.status.command.PipelineSettings", lambda: s)
    d = collect(s)["dedup"]
    assert d["ran"] is False and d["enhanced"] == 4 and d["behind"] == 4
    assert collect(s, range(1, 3))["corpus"]["dedup"]["behind"] == 2
    res = CliRunner().invoke(status, [])
    assert "dedup: not run (4 enhanced shards to index" in res.output
    write_result(store, {"x_0001": "x_0000", "y_0000": "x_0000"}, shards=[0, 1, 2, 9],
                 seconds={"x_0001": 1800.0, "y_0000": 1800.0}, bad={"7": "missing"})
    data = collect(s)
    d = data["dedup"]
    assert (d["covered"], d["behind"], d["indexed_shards"]) == (3, 1, 4)
    # the declared corpus step, over the shards done at the stage it follows
    assert data["corpus"]["dedup"] == {"name": "dedup", "after": "enhance",
                                       "applied_by": "tokenize", "ran": True, "done": 4,
                                       "covered": 3, "error": None, "behind": 1}
    assert d["duplicate_segments"] == 2 and d["duplicate_hours"] == 1.0
    assert d["bad_signatures"] == 1 and d["error"] is None
    assert collect(s, range(2, 4))["dedup"]["covered"] == 1  # shard 2 of 2 and 3
    out = json.loads(CliRunner().invoke(status, ["--json"]).output)
    assert out["dedup"]["covered"] == 3 and out["dedup"]["enhanced"] == 4
    res = CliRunner().invoke(status, [])
    assert res.exit_code == 0, res.output
    text = " ".join(res.output.split())
    assert "dedup index: 3/4 enhanced shards covered (75%), 1 behind; 2 duplicates (1.00 h)" in text
    assert "1 shards left out (bad signature files)" in text


def test_unreadable_summary_is_said_not_fatal(make_settings, monkeypatch) -> None:
    s, store = _settings(make_settings, 2)
    store.write_bytes(SUMMARY_KEY, b'{"shards": "all"}')
    d = collect(s)["dedup"]
    assert d["ran"] is True and d["behind"] is None and SUMMARY_KEY in d["error"]
    c = collect(s)["corpus"]["dedup"]
    assert c["ran"] is True and c["behind"] is None and SUMMARY_KEY in c["error"]
    monkeypatch.setattr("services.ops.status.command.PipelineSettings", lambda: s)
    res = CliRunner().invoke(status, [])
    assert res.exit_code == 0 and "dedup: result unreadable (dedup/summary.json" in res.output
