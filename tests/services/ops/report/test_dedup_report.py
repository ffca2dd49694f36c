"""`onsei report`: duplicate hours and the largest clusters (text and HTML) from the dedup
result; tokenize's duplicate skips count under one reason."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from common.ledger.store import Ledger
from common.storage import open_store
from services.dedup.result import DUPLICATES_KEY, Cluster
from services.ops.report.collect import collect, to_json
from services.ops.report.render import render_html
from services.stages import PIPELINE
from tests.dedupfiles import write_result
from tests.services.ops.report.synth import write_run


def _with_result(make_settings):
    s = make_settings()
    write_run(s, shards=2)
    store = open_store(s.output_url, s)
    largest = [Cluster(keep="a_0000", size=2, seconds=7200.0, text="two of us"),
               Cluster(keep="b_0000", size=40, seconds=3600.0, text="<b>intro</b> jingle")]
    write_result(store, {f"c{i}_0000": "b_0000" for i in range(39)} | {"a_0001": "a_0000"},
                 shards=[0, 1], seconds={"a_0001": 3600.0}, largest=largest, segments=500,
                 bad={"2": "missing signature file"})
    return s, store


def test_duplicate_hours_and_largest_clusters(make_settings, monkeypatch) -> None:
    s, _ = _with_result(make_settings)
    data = collect(s.output_url, s)
    d = to_json(data)["dedup"]
    assert d["ran"] is True and d["error"] is None
    assert d["duplicate_segments"] == 40 and d["clusters"] == 2 and d["shards"] == 2
    assert d["duplicate_hours"] == pytest.approx((3600.0 + 39) / 3600)
    assert [c["keep"] for c in d["largest"]] == ["b_0000", "a_0000"]  # most copies first
    # the declared corpus step, over the enhanced shards (2 written by write_run)
    assert to_json(data)["corpus"]["dedup"] == {
        "name": "dedup", "after": "enhance", "applied_by": "tokenize", "ran": True,
        "done": 2, "covered": 2, "error": None, "behind": 0}
    html = render_html(data)
    assert ('<h2>Duplicates</h2><p class="corpus">dedup (after enhance, applied by tokenize): '
            'covers 2/2 enhance shards, 0 behind</p><p id="dedup">40 duplicate segments') in html
    assert "&lt;b&gt;intro&lt;/b&gt; jingle" in html and "<b>intro" not in html
    assert "missing signature file" in html
    from services.ops.report.cli import report

    monkeypatch.setattr("services.ops.report.cli.PipelineSettings", lambda: s)
    res = CliRunner().invoke(report, [])
    assert res.exit_code == 0, res.output
    assert "dedup     40 duplicate segments (1.011 h) in 2 clusters, 2 shards indexed" in res.output
    assert "  dedup (after enhance, applied by tokenize): covers 2/2 enhance shards" in res.output
    assert "40 copies" in res.output and "'<b>intro</b> jingle'" in res.output


def test_tokenize_duplicate_skips_count_as_one_reason(make_settings) -> None:
    s = make_settings()
    store = open_store(s.output_url, s)
    skipped = [{"key": f"c{i}_0000", "reasons": [f"duplicate_of:k{i}_0000"], "seconds": 900.0}
               for i in range(4)]
    Ledger(store, s, PIPELINE).mark_done("tokenize", 0, {"skipped": skipped})
    q = to_json(collect(s.output_url, s))["quality"]
    assert q["skipped_hours_by_reason"] == {"duplicate_of": 1.0}


def test_unreadable_result_is_shown_not_fatal(make_settings) -> None:
    s, store = _with_result(make_settings)
    store.write_bytes(DUPLICATES_KEY, b'{"id": "x"}\n')
    data = collect(s.output_url, s)
    d = to_json(data)["dedup"]
    assert d["ran"] is True and "does not match" in d["error"]
    assert data.files == 8  # the rest of the report is there
    assert 'class="bad">Dedup result unreadable' in render_html(data)
    assert json.dumps(to_json(data), default=str)


def test_not_run(make_settings) -> None:
    s = make_settings()
    write_run(s, shards=1)
    data = collect(s.output_url, s)
    assert to_json(data)["dedup"]["ran"] is False
    assert to_json(data)["corpus"]["dedup"]["ran"] is False
    assert "dedup (after enhance, applied by tokenize): not run (1 enhance shards" in \
        render_html(data)
    assert "`onsei dedup` has not run" in render_html(data)
