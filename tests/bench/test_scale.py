"""The scale bench at a small size: real fleets of worker processes on a private Redis, every
shard through three stages exactly once, and the control-plane figures all measured.

The full run is ``python -m bench.scale --shards 50000`` (docs/operations.md, "Scale")."""

from __future__ import annotations

import pytest

from bench.scale import measure, rows


@pytest.mark.slow
def test_scale_run_small_is_exactly_once() -> None:
    m = measure(shards=300, ledger_shards=3000, workers=2, stage_ms=2.0, timeout=240,
                flower_tasks=3000)
    assert m["audit"]["exactly_once"], m["audit"]
    for stage, st in m["stages"].items():
        assert st["tasks"] == 300 and st["process_calls"] == 300, stage
        assert st["task_ms"] >= st["stage_ms"] >= 2.0 and st["cpu_ms_per_task"] > 0
    cp = m["control_plane"]
    assert cp["done"] == 3000
    for call in ("first", "machine", "repeated"):
        assert cp[f"status_{call}_done"] == {"asr": 3000, "enhance": 3000, "tokenize": 3000}
    assert cp["enqueue_49k_done_enqueued"] == 1000  # only the hidden shards
    assert cp["list_requests_per_stage"] == 3  # 1,000 keys per LIST page
    # first call anywhere: one GET per record (+ 3 missing rollups a stage), rollups written
    assert cp["status_first_requests"]["GET"] == 3 * 3000 + 3 * 3
    assert cp["status_first_requests"]["PUT"] == 3 * 3
    assert cp["status_machine_requests"]["GET"] == 3 * 3  # another machine: the rollups only
    assert cp["status_repeated_requests"].get("GET", 0) == 0  # then none: its record cache
    assert cp["status_repeated_requests"]["LIST"] == 3 * 3 + 3  # done + failed listings
    assert 200 < cp["redis_bytes_per_queued_shard"] < 4096
    assert len(rows(m)) >= 12
