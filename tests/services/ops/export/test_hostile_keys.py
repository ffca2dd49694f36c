"""A source key is data wherever the export carries it: a key holding tabs, a JSON body and a
newline (tokens lines written before asr refused such names, or by any other writer) is
exported as the segment it is, never read as a line of its own choosing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from common.storage import open_store
from services.ops.cli import cli
from services.records import corpus_id
from tests.services.ops.export.synth import Seg, default_run, lines_of, quality, write_run

FORGED = {"id": "forged_0000@000000", "text": "chosen", "codes": {"neu_tokens": [6, 6, 6]},
          "duration_seconds": 1}
# the old staging line: node, path set, language, seconds, speaker, id, body, tab-separated
EVIL = ("x\tps\ten\t1\t\tforged_0000@000000\t" + json.dumps(FORGED, separators=(",", ":"))
        + "\nfile:0:y")
KEYS = [EVIL, "tab\there", "cr\rhere", "nl\nhere", "sep\u2028here", "mix[/x]", "[link=http://x]a",
        "<b>html</b>", "{\"id\": 1}"]


@pytest.mark.parametrize("tokens", [True, False], ids=["tokens", "no-tokens"])
def test_a_crafted_key_is_exported_as_itself(make_settings, tmp_path: Path, monkeypatch,
                                               tokens: bool) -> None:
    s = make_settings()
    run = default_run(files_per_shard=2, shards=1)
    for key in KEYS:
        run.languages[key] = "en"
        run.shards[0].append(Seg(f"{key}_0000", 1.5, quality()))
    write_run(open_store(s.output_url, s), s, run, tokens=tokens)
    monkeypatch.setenv("ONSEI_OUTPUT_URL", s.output_url)
    to = tmp_path / "set"
    res = CliRunner().invoke(cli, ["export", "--to", str(to), "--validation-fraction", "0",
                                   *([] if tokens else ["--no-tokens"])])
    assert res.exit_code == 0, res.output
    rows = lines_of(to)["train"]
    made = {corpus_id(seg.id, 0) for seg in run.shards[0]}
    ids = [r["id"] for r in rows]
    assert len(ids) == len(set(ids)) and set(ids) <= made, sorted(set(ids) - made)
    assert not any(r["text"] == "chosen" for r in rows), rows
    # the names the tar rule refuses are gone from the sidecars; every other one is exported
    refused = {k for k in KEYS if any(c in k for c in "\t\r\n\u2028")} if not tokens else set()
    assert set(ids) == {corpus_id(f"{k}_0000", 0) for k in KEYS if k not in refused} | {
        corpus_id(seg.id, 0) for seg in run.shards[0][:6]}


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(st.text(), st.text(), st.text()), min_size=1, max_size=5))
def test_a_staged_line_reads_back_as_written(tmp_path_factory, rows) -> None:
    """Any key, label and text (control characters, separators, JSON, quotes): one staged line
    each, read back field for field by the writer's own reader."""
    from services.ops.export.line import ExportLine
    from services.ops.export.source import Staged, one_line, stage_line, staged

    path = tmp_path_factory.mktemp("staged") / "0.staged"
    want = []
    for key, speaker, text in rows:
        body = one_line(ExportLine(id=f"{key}_0000@000000", text=text).to_json()) + "\n"
        want.append(Staged(f"file:0:{key}", "ps", "en", 1.5, speaker, f"{key}_0000@000000",
                           body))
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.writelines(stage_line(x) for x in want)
    with open(path, encoding="utf-8", newline="\n") as f:
        got = [staged(raw) for raw in f]
    assert got == want
    assert [json.loads(x.body)["text"] for x in got] == [t for _, _, t in rows]
