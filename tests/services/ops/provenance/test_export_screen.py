"""The export's provenance screen on a finished run (no models): each line's source and
licence, the licence policy, a takedown by key, and the card's counts."""

from __future__ import annotations

import json
from pathlib import Path

from common.storage import open_store
from services.ops.export.run import export
from services.ops.export.write import SplitPlan
from services.ops.provenance.requests import Takedown, record
from services.ops.provenance.screen import ScreenOptions
from services.provenance.table import ProvenanceRow
from tests.services.ops.export.synth import default_run, lines_of, write_run

LICENCES = {"000000": "CC0-1.0", "000001": "CC-BY-4.0", "000002": "MIT", "000003": "CC0-1.0",
            "001000": "CC-BY-4.0"}


def _table(keys: dict[str, str]) -> bytes:
    return "".join(ProvenanceRow(key=k, source=f"https://v/{k}", licence=lic,
                                 owner=f"owner {k}").to_json() + "\n"
                   for k, lic in keys.items()).encode()


def test_lines_card_policy_and_takedown(make_settings, tmp_path: Path) -> None:
    s = make_settings(filter_min_ovrl=0.0)
    store = open_store(s.output_url, s)
    run = default_run()
    write_run(store, s, run)
    store.write_bytes("provenance/shard-000000.jsonl",
                      _table({k: v for k, v in LICENCES.items() if k.startswith("000")}))
    store.write_bytes("provenance/shard-000001.jsonl", _table({"001000": "CC-BY-4.0"}))
    # shard 2: transcribed before provenance (no table): every key unknown
    record(store, Takedown(id="t1", kind="key", value="000003@000000", requested_by="me",
                           reason="asked", requested_at=1.0))
    to = tmp_path / "set"
    res = export(s, s.output_url, str(to), plan=SplitPlan(validation_fraction=0.0),
                 screening=ScreenOptions.parse("cc0-1.0, CC-BY-4.0"))
    lines = lines_of(to)["train"]
    by_id = {x["id"]: x for x in lines}
    assert by_id["000000_0000@000000"]["licence"] == "CC0-1.0"
    assert by_id["000001_0001@000000"]["origin"] == "https://v/000001"
    assert by_id["001000_0000@000001"]["licence"] == "CC-BY-4.0"
    assert {x["id"].split("_")[0] for x in lines} == {"000000", "000001", "001000"}
    removed = {}
    for r in res.reads:
        for k, n in r.removed.items():
            removed[k] = removed.get(k, 0) + n
    kept_before = {s_.id for segs in run.shards.values() for s_ in segs}
    assert removed["licence:MIT"] == 3 and removed["takedown:t1"] == 3
    unknown = len([i for i in kept_before if i.split("_")[0] not in LICENCES])
    assert removed["licence:unknown"] == unknown
    card = (to / "README.md").read_text()
    assert "Takedowns applied: 1" in card
    assert f"| `unknown` | {unknown} |" in card and "| `MIT` | 3 |" in card
    section = card.split("### Hours by licence", 1)[1].split("###", 1)[0]
    seconds = {lic: sum(x["duration_seconds"] for x in lines if x["licence"] == lic)
               for lic in ("CC0-1.0", "CC-BY-4.0")}
    for lic, sec in seconds.items():
        n = sum(1 for x in lines if x["licence"] == lic)
        assert f"| `{lic}` | {n} | {sec / 3600:.3f} |" in section
    attribution = card.split("### Attribution", 1)[1].split("###", 1)[0]
    assert "`https://v/000001`: owner 000001, `CC-BY-4.0`" in attribution
    assert "000000" not in attribution  # CC0 asks for no credit
    assert json.loads(json.dumps(res.written.lines))["train"] == len(lines)


def test_check_lists_the_published_lines_a_later_request_covers(make_settings,
                                                                tmp_path: Path) -> None:
    from click.testing import CliRunner

    from services.ops.provenance.cli import takedown

    s = make_settings(filter_min_ovrl=0.0)
    store = open_store(s.output_url, s)
    write_run(store, s, default_run())
    store.write_bytes("provenance/shard-000001.jsonl", _table({"001002": "CC0-1.0"}))
    to = tmp_path / "set"
    export(s, s.output_url, str(to), plan=SplitPlan(validation_fraction=0.0))
    env = {"ONSEI_OUTPUT_URL": s.output_url, "ONSEI_SCRATCH_DIR": s.scratch_dir}
    run = CliRunner()
    got = run.invoke(takedown, ["--check", str(to)], env=env)
    assert got.exit_code == 0 and "0 lines" in got.output, got.output
    assert run.invoke(takedown, ["--source", "https://v/001002", "--reason", "asked"],
                      env=env).exit_code == 0
    assert run.invoke(takedown, ["--key", "000004", "--reason", "asked"], env=env).exit_code == 0
    got = run.invoke(takedown, ["--check", str(to)], env=env)
    rows = [r.split("\t") for r in got.output.splitlines() if "\t" in r]
    assert sorted(r[1] for r in rows) == sorted(
        [f"001002_{i:04d}@000001" for i in range(3)]
        + [f"000004_{i:04d}@{sh:06d}" for i in range(3) for sh in (0,)])
    assert all(r[0].startswith("train/part-00000.jsonl:") for r in rows)
    assert "6 lines" in got.output
    got = run.invoke(takedown, ["--check", str(tmp_path)], env=env)
    assert got.exit_code == 1 and "not an onsei export" in got.output
