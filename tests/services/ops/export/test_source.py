"""Export reads every tokens line and sidecar through its typed record and refuses what cannot
be a segment (a duration that is not a number of seconds, an id seen before in the shard),
counting it: the card never shows ``nan`` hours."""

from __future__ import annotations

import json
import math
from pathlib import Path

from common.ledger.store import Ledger
from common.shards.tar import ShardWriter
from common.storage import open_store
from services.ops.export.run import export
from services.ops.export.write import SplitPlan
from services.records import corpus_id
from services.stages import PIPELINE
from tests.services.ops.export.synth import default_run, lines_of, write_run

BAD = [  # (id, duration_seconds as JSON) of shard 0's extra lines
    ("000000_0100", "NaN"), ("000000_0101", "-5"), ("000000_0102", "Infinity"),
    ("000000_0103", "1e308"), ("000000_0000", "2.0"),  # the shard's first line again
]


def _corrupt(store, s) -> None:
    key = PIPELINE.output_key("tokenize", s, 0)
    body = store.read_bytes(key).decode()
    for seg_id, seconds in BAD:
        line = {"id": seg_id, "text": "t", "codes": {"neu_tokens": [1]}, "duration_seconds": 0}
        body += json.dumps(line).replace('"duration_seconds": 0', f'"duration_seconds": {seconds}')
        body += "\n"
    store.write_bytes(key, body.encode())
    ledger = Ledger(store, s, PIPELINE)
    rec = ledger.read_done("tokenize", 0)
    assert rec is not None
    stats = dict(rec.stats)
    stats["skipped"] = [*stats["skipped"], {"key": "x_0000", "reasons": ["dnsmos_ovrl<2"],
                                             "seconds": math.nan}]
    ledger.mark_done("tokenize", 0, {"model": rec.model, "version": rec.version,
                                     "model_info": rec.model_info, "stats": stats})


def test_bad_durations_and_repeated_ids_refused(make_settings, tmp_path: Path) -> None:
    s = make_settings()
    store = open_store(s.output_url, s)
    run = default_run(files_per_shard=2, shards=2)
    write_run(store, s, run)
    _corrupt(store, s)
    to = tmp_path / "set"
    res = export(s, s.output_url, str(to), plan=SplitPlan(validation_fraction=0.0))
    rows = lines_of(to)["train"]
    ids = [x["id"] for x in rows]
    assert sorted(ids) == sorted(corpus_id(seg.id, i) for i, segs in run.shards.items()
                                 for seg in segs)
    first = next(x for x in rows if x["id"] == "000000_0000@000000")
    assert first["duration_seconds"] == 1.0  # the first copy, not the repeat's 2.0
    assert all(math.isfinite(x["duration_seconds"]) and x["duration_seconds"] >= 0
               for x in rows)
    assert dict(res.reads[0].refused) == {
        "duration_seconds not finite": 2, "duration_seconds negative": 1,
        "duration_seconds over max_member_seconds": 1, "id repeats in the shard": 1,
        "tokenize skipped entry: duration_seconds not finite": 1}
    assert math.isfinite(res.written.seconds["train"])
    card = (to / "README.md").read_text()
    assert "nan" not in card.lower() and "inf" not in card.split("## Source")[0].lower()
    assert ("lines refused: 6 (duration\\_seconds negative: 1, duration\\_seconds not finite: "
            "2, duration\\_seconds over max\\_member\\_seconds: 1, id repeats in the shard: 1, "
            "tokenize skipped entry: duration\\_seconds not finite: 1)") in card
    assert "| `dnsmos_ovrl<2` | tokenize | 2 |" in card  # the NaN entry not counted


def test_cli_says_lines_were_refused(make_settings, tmp_path: Path, monkeypatch) -> None:
    from click.testing import CliRunner

    from services.ops.cli import cli

    s = make_settings()
    store = open_store(s.output_url, s)
    write_run(store, s, default_run(files_per_shard=2, shards=1))
    _corrupt(store, s)
    monkeypatch.setattr("services.stages.PipelineSettings", lambda: s)
    res = CliRunner().invoke(cli, ["export", "--to", str(tmp_path / "set")])
    assert res.exit_code == 0, res.output
    assert ("6 lines refused (not a number of seconds, an id twice in a shard): the card counts "
            "them by reason") in res.output


def test_bad_sidecar_durations_refused(make_settings, tmp_path: Path) -> None:
    """--no-tokens: the sidecars go through the same checks."""
    s = make_settings()
    store = open_store(s.output_url, s)
    run = default_run(files_per_shard=1, shards=1)
    write_run(store, s, run, tokens=False)
    tar = tmp_path / "e.tar"
    with ShardWriter(tar) as w:
        for seg, seconds in zip(run.shards[0], ("1.0", "-5", "NaN"), strict=True):
            meta = json.dumps({"text": "t", "language": "en", "source_key": seg.source,
                               "duration_seconds": 0})
            meta = meta.replace('"duration_seconds": 0', f'"duration_seconds": {seconds}')
            w.write(seg.id, {"flac": b"fLaC-not-decoded", "json": meta.encode()})
    store.put_file(tar, PIPELINE.output_key("enhance", s, 0))
    to = tmp_path / "set"
    res = export(s, s.output_url, str(to), tokens=False, plan=SplitPlan(validation_fraction=0.0))
    assert [x["id"] for x in lines_of(to)["train"]] == ["000000_0000@000000"]
    assert dict(res.reads[0].refused) == {"duration_seconds negative": 1,
                                          "duration_seconds not finite": 1}
    assert "nan" not in (to / "README.md").read_text().lower()


def test_no_id_is_written_twice_in_the_export(make_settings, tmp_path: Path) -> None:
    """Shards 0 and 1 hold the same keys (two pack-audio runs): each line gets its shard, so
    both are exported. A line whose id already names a shard is taken as it is: one naming
    another shard (a shard's lines copied into another's file) is refused, and one naming its
    own shard that repeats an id read there is refused as a repeat."""
    s = make_settings()
    store = open_store(s.output_url, s)
    run = default_run(files_per_shard=1, shards=2)
    for seg in run.shards[1]:
        seg.id = seg.id.replace("001000", "000000")  # the same keys in both shards
    for seg in run.shards[0] + run.shards[1]:
        seg.speaker = "000000#s0"  # two voices, one label within each shard
    write_run(store, s, run)
    key = PIPELINE.output_key("tokenize", s, 1)
    body = store.read_bytes(key).decode()
    for seg_id in ("000000_0000@000000", "000000_0001@000001"):
        body += json.dumps({"id": seg_id, "text": "t", "codes": {"neu_tokens": [1]},
                            "duration_seconds": 1.0}) + "\n"
    store.write_bytes(key, body.encode())
    to = tmp_path / "set"
    res = export(s, s.output_url, str(to), plan=SplitPlan(validation_fraction=0.0))
    ids = [x["id"] for x in lines_of(to)["train"]]
    assert sorted(ids) == sorted(f"000000_000{i}@00000{shard}" for i in range(3)
                                 for shard in (0, 1))
    assert dict(res.reads[1].refused) == {"id names another shard": 1,
                                          "id repeats in the shard": 1}
    assert {x["speaker_id"] for x in lines_of(to)["train"]} == {"000000#s0@000000",
                                                                "000000#s0@000001"}


def test_a_recording_whose_copy_kept_is_filtered_is_exported_once(make_settings,
                                                                  tmp_path: Path) -> None:
    """One recording in shards 0, 1, 2 under one key; dedup kept shard 0's copy (best OVRL),
    which this export's policy filters (multi_speaker): shard 1's copy, the next in rank order
    that passes, is exported instead, and shard 2's stays out as its duplicate."""
    from tests.dedupfiles import write_result
    from tests.services.ops.export.synth import quality

    s = make_settings(filter_multi_speaker=True)  # off by default
    store = open_store(s.output_url, s)
    run = default_run(files_per_shard=1, shards=3)
    flagged, clean = quality(ovrl=4.0, multi=True), quality(ovrl=3.0)
    for sid in (1, 2):
        for seg in run.shards[sid]:
            seg.id = seg.id.replace(f"{sid:03d}000", "000000")
    for sid, segs in run.shards.items():
        segs[0].quality = flagged if sid == 0 else clean
    write_run(store, s, run)
    write_result(store, {"000000_0000@000001": "000000_0000@000000",
                         "000000_0000@000002": "000000_0000@000000"}, shards=[0, 1, 2],
                 fields={f"000000_0000@00000{sid}": {
                     "rank": sid, "quality": clean.to_dict(), "keep_quality": flagged.to_dict()}
                     for sid in (1, 2)})
    to = tmp_path / "set"
    res = export(s, s.output_url, str(to), plan=SplitPlan(validation_fraction=0.0))
    ids = sorted(x["id"] for x in lines_of(to)["train"])
    assert [i for i in ids if i.startswith("000000_0000@")] == ["000000_0000@000001"]
    assert len(ids) == len(set(ids)) == 3 * 3 - 2
    assert res.reads[0].removed == {"multi_speaker": 1}
    assert res.reads[1].removed == {} and res.reads[2].removed == {"duplicate_of": 1}
