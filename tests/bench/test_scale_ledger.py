"""The status figures of the scale bench (bench/scale_ledger.py) on a small ledger: the
requests of a first call anywhere, another machine's first call and a repeated call."""

from __future__ import annotations

import pytest

from bench.scale_ledger import fill_ledger, status_rows, time_status


@pytest.mark.parametrize("forked", [False, True], ids=["in-process", "forked-readers"])
def test_status_calls_count_their_requests(forked, make_settings, monkeypatch) -> None:
    if forked:  # the records read by forked processes count too (shared memory)
        import common.ledger.index as rc

        monkeypatch.setattr(rc, "PROCESS_MIN", 100)
        monkeypatch.setattr(rc.os, "cpu_count", lambda: 2)
    s = make_settings(broker_url="redis://127.0.0.1:1/0")
    n = 1200  # two rollup blocks a stage, the second one partly full
    fill_ledger(s, n)
    res = time_status(s, range(n))
    # nothing here is timed: the figures are request counts, and a failure shows them all
    counts = {k: v for k, v in res.items() if not k.endswith("_s")}
    for call in ("first", "machine", "repeated"):
        assert res[f"status_{call}_done"] == {"asr": n, "enhance": n, "tokenize": n}, counts
    first, machine = res["status_first_requests"], res["status_machine_requests"]
    # each call reads each corpus step's summary once (dedup/summary.json for its line and
    # dedup's figures, speakers/summary.json for its line)
    summary = 2
    assert first["GET"] == 3 * n + 3 * 2 + summary and first["PUT"] == 3 * 2, counts
    assert machine["GET"] == 3 * 2 + summary and "PUT" not in machine, counts
    assert res["status_repeated_requests"].get("GET", 0) == summary, counts
    assert len(status_rows(res, n)) == 9
