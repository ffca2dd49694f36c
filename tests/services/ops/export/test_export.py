"""`onsei export`: filtered, deduplicated JSONL that `datasets` loads, split by group, with
a card; published whole."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from common.storage import open_store
from services.ops.export.publish import MARKER, new_marker
from services.ops.export.run import ExportError, export
from services.ops.export.write import SplitPlan
from services.records import corpus_id
from tests.dedupfiles import write_result
from tests.services.ops.export.synth import default_run, lines_of, write_run


def _setup(make_settings, tokens: bool = True, **kw):
    s = make_settings(**kw)
    store = open_store(s.output_url, s)
    run = default_run()
    write_run(store, s, run, tokens=tokens)
    return s, store, run


def _load(root: Path, tmp_path: Path):
    import datasets

    return datasets.load_dataset("json", data_dir=str(root), cache_dir=str(tmp_path / "hf"))


def test_export_loads_with_datasets_split_by_group(make_settings, tmp_path: Path) -> None:
    s, store, run = _setup(make_settings)
    # 001001_0002 (covered shard 1) is a copy of 000001_0002; 002004_0000 is listed too, but
    # shard 2 is not covered by the result: kept
    write_result(store, {"001001_0002": "000001_0002", "002004_0000": "000004_0000"},
                 shards=[0, 1], seconds={"001001_0002": 1.5})
    to = tmp_path / "set"
    res = export(s, s.output_url, str(to), plan=SplitPlan(seed=3, validation_fraction=0.4))
    got = lines_of(to)
    ids = {x["id"] for split in got.values() for x in split}
    # ids and speaker labels are corpus ids: <id within the shard>@<shard>
    expected = {corpus_id(seg.id, i) for i, segs in run.shards.items()
                for seg in segs} - {"001001_0002@000001"}
    assert ids == expected and sum(map(len, got.values())) == len(expected)
    assert got["train"] and got["validation"]
    side = {}
    for split, rows in got.items():
        for x in rows:
            for group in (x["id"].rsplit("_", 1)[0], x.get("speaker_id")):
                if group:
                    assert side.setdefault(group, split) == split, f"{group} on both sides"
    # joined by "narrator" within a shard; a label in another shard is another voice
    assert side["001001"] == side["001002"] and side["002001"] == side["002002"]
    assert side["narrator@000001"] and side["narrator@000002"] and "narrator" not in side
    first = got["train"][0]
    assert set(first) >= {"id", "text", "codes", "duration_seconds", "language", "quality"}
    line = next(x for x in got["train"] + got["validation"] if x["id"] == "000002_0001@000000")
    assert line["language"] == "ja" and line["codes"] == {"neu_tokens": [1, 1]}
    assert line["quality"]["dnsmos_after"]["ovrl"] == 3.2
    assert res.written.lines["train"] == len(got["train"])
    ds = _load(to, tmp_path)
    assert set(ds) == {"train", "validation"}
    assert ds["train"].num_rows == len(got["train"])
    assert ds["validation"].num_rows == len(got["validation"])
    assert sorted(ds["train"]["id"]) == sorted(x["id"] for x in got["train"])


def test_schema_witnesses_come_first(make_settings, tmp_path: Path) -> None:
    """Shard 0's first file has no annotations and no speaker labels; fidelity_cer exists only
    in the last shard's last file: `datasets` infers its schema from the first lines, so they
    must hold every field somewhere, or the later lines fail to cast."""
    s, _store, _ = _setup(make_settings)
    to = tmp_path / "set"
    export(s, s.output_url, str(to), plan=SplitPlan(validation_fraction=0.0))
    rows = lines_of(to)["train"]
    head = rows[:3]
    assert any(x.get("quality") and x["quality"]["fidelity_cer"] == 0.05 for x in head)
    assert any(x.get("speaker_id") for x in head)
    assert len(rows) == len({x["id"] for x in rows}) == 54  # moved, never copied
    ds = _load(to, tmp_path)
    assert ds["train"].num_rows == 54
    assert min(x for x in ds["train"]["speaker_id"] if x) == "000001#s1@000000"


def test_split_is_deterministic_and_follows_the_seed(make_settings, tmp_path: Path) -> None:
    s, _, _ = _setup(make_settings)
    a, b, c = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    for d, seed in ((a, 1), (b, 1), (c, 2)):
        export(s, s.output_url, str(d), plan=SplitPlan(seed=seed, validation_fraction=0.3))
    part = "train/part-00000.jsonl"
    assert (a / part).read_bytes() == (b / part).read_bytes()
    assert lines_of(a) == lines_of(b) and lines_of(a) != lines_of(c)


def test_filter_policy_and_card(make_settings, tmp_path: Path) -> None:
    s, store, _run = _setup(make_settings, filter_min_ovrl=3.5)  # every annotated line fails
    write_result(store, {"000001_0000": "000002_0000"}, shards=[0, 1, 2])
    to = tmp_path / "set"
    export(s, s.output_url, str(to), plan=SplitPlan(validation_fraction=0.0))
    got = lines_of(to)["train"]
    assert sorted(x["id"] for x in got) == ["000000_0000@000000", "000000_0001@000000",
                                            "000000_0002@000000"]
    card = (to / "README.md").read_text()
    assert "| `dnsmos_ovrl<3.5` | export | 51 |" in card  # 54 less 3 unannotated
    assert "| `dnsmos_ovrl<2` | tokenize | 3 |" in card  # from the done records' skipped
    assert "Duplicates removed: 1 segments" in card
    assert "| en | 0.001 | 0.000 |" in card  # 3 unannotated English segments, 3.75 s
    assert '"version": "0.0.4"' in card and "neuphonic/neucodec" in card
    assert "bundled:whisper-base" in card and '"min_ovrl": 3.5' in card
    assert card.startswith("---\nconfigs:")


def test_no_tokens_exports_the_sidecars(make_settings, tmp_path: Path) -> None:
    s, _store, _run = _setup(make_settings, tokens=False)
    with pytest.raises(ExportError, match="no shard .* has a tokenize done record; --no-tokens"):
        export(s, s.output_url, str(tmp_path / "x"))
    to = tmp_path / "set"
    export(s, s.output_url, str(to), tokens=False, plan=SplitPlan(validation_fraction=0.0))
    rows = lines_of(to)["train"]
    assert len(rows) == 54 and all("codes" not in x for x in rows)
    x = next(r for r in rows if r["id"] == "000002_0001@000000")
    assert x["audio_member"] == "000002_0001.flac" and x["language"] == "ja"
    assert x["audio_tar"].endswith("enhanced/shard-000000.tar")
    assert _load(to, tmp_path)["train"].num_rows == 54


def test_range_and_left_out_shards(make_settings, tmp_path: Path) -> None:
    s, store, _ = _setup(make_settings)
    store.delete("tokens/neucodec/shard-000002.jsonl")
    to = tmp_path / "set"
    res = export(s, s.output_url, str(to), ids=range(1, 3), plan=SplitPlan(validation_fraction=0.0))
    assert [r.shard_id for r in res.reads] == [1, 2]
    assert {x["id"][:3] for x in lines_of(to)["train"]} == {"001"}
    assert "- 2: tokens/neucodec/shard-000002.jsonl missing" in (to / "README.md").read_text()


def test_publish_is_whole_or_nothing(make_settings, tmp_path: Path, monkeypatch) -> None:
    s, _store, _ = _setup(make_settings)
    to = tmp_path / "set"
    export(s, s.output_url, str(to), plan=SplitPlan(validation_fraction=0.0))
    before = {p.relative_to(to): p.read_bytes() for p in to.rglob("*") if p.is_file()}

    def boom(*_a, **_k):
        raise RuntimeError("disk full")

    monkeypatch.setattr("services.ops.export.run.render", boom)
    with pytest.raises(RuntimeError, match="disk full"):
        export(s, s.output_url, str(to), plan=SplitPlan(validation_fraction=0.5))
    assert {p.relative_to(to): p.read_bytes() for p in to.rglob("*") if p.is_file()} == before
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".set")) == []
    other = tmp_path / "notes"
    other.mkdir()
    (other / "mine.txt").write_text("keep")
    with pytest.raises(Exception, match="exists and was not written by onsei export"):
        export(s, s.output_url, str(other))
    assert [p.name for p in other.iterdir()] == ["mine.txt"]


def test_corrupt_dedup_result_is_one_clear_error(make_settings, tmp_path: Path) -> None:
    s, store, _ = _setup(make_settings)
    write_result(store, {"001001_0002": "000001_0002"}, shards=[0, 1])
    store.write_bytes("dedup/duplicates.jsonl", b"")
    with pytest.raises(ExportError, match="dedup result .*summary.json unusable: .*does not match"):
        export(s, s.output_url, str(tmp_path / "set"))
    assert not (tmp_path / "set").exists()


def test_s3_root_and_s3_target(make_settings, s3_bucket: str, tmp_path: Path) -> None:
    root = f"s3://{s3_bucket}/run"
    s = make_settings(output_url=root)
    store = open_store(root, s)
    write_run(store, s, default_run(files_per_shard=2, shards=2))
    write_result(store, {"001001_0002": "000001_0002"}, shards=[0, 1])
    to = f"s3://{s3_bucket}/sets/v1"
    target = open_store(to, s)
    target.write_bytes(MARKER, new_marker().to_json().encode())  # an older, larger export
    target.write_bytes("train/part-00007.jsonl", b"{}\n")
    res = export(s, root, to, plan=SplitPlan(validation_fraction=0.0))
    keys = sorted(target.list(""))
    assert keys == [MARKER, "README.md", "train/part-00000.jsonl"]
    rows = [json.loads(x) for x in target.read_bytes("train/part-00000.jsonl").splitlines()]
    assert len(rows) == res.written.lines["train"] == 11
    assert "Duplicates removed: 1 segments" in target.read_bytes("README.md").decode()


def test_cli_one_line_results_and_errors(make_settings, tmp_path: Path, monkeypatch) -> None:
    from click.testing import CliRunner

    from services.ops.cli import cli

    s = make_settings()
    monkeypatch.setattr("services.stages.PipelineSettings", lambda: s)
    to = str(tmp_path / "set")
    res = CliRunner().invoke(cli, ["export", "--to", to])
    assert res.exit_code == 1
    assert res.output.strip().splitlines() == [
        (f"Error: no shard of {s.output_url} has a tokenize done record; --no-tokens exports "
        "the enhanced shards")]
    write_run(open_store(s.output_url, s), s, default_run())
    res = CliRunner().invoke(cli, ["export", "--output", s.output_url, "--to", to,
                                   "--range", "0-1", "--validation-fraction", "0.5"])
    assert res.exit_code == 0, res.output
    assert res.output.startswith(f"{to}: train ") and "card" in res.output
    res = CliRunner().invoke(cli, ["export", "--to", to, "--validation-fraction", "1"])
    assert res.exit_code == 1 and "between 0 and 1" in res.output
