"""From the tokenize stage's own output (real FLAC through the codec) to a loaded dataset: the
codes exported are the codes tokenize wrote, duplicates out, one file on one side."""

from __future__ import annotations

import json
from pathlib import Path

from common.stages.engine import Engine
from services.records import AsrLine, local_name
from services.stages import PIPELINE, output_key
from services.tokenize.stage import TokenizeStage
from tests.dedupfiles import write_result
from tests.services.tokenize.conftest import codec, neucodec_dir, write_enhanced_tar  # noqa: F401

FILES = {"spk1file": "en", "spk2file": "ja", "spk3file": "en", "spk4file": "en"}


def test_tokenized_shards_export_and_load(make_settings, codec,  # noqa: F811
                                          tmp_path: Path) -> None:
    import datasets

    from services.ops.export.run import export
    from services.ops.export.write import SplitPlan

    s = make_settings(tokenize_neucodec_model=str(codec.directory), tokenize_device="cpu")
    stage = TokenizeStage(s)
    stage.codec = codec
    engine = Engine(s, PIPELINE, stage)
    for shard in (0, 1):
        segs = [(f"{k}{shard}_{i:04d}", 0.4 + 0.1 * i, f"{k} words {i}")
                for k in FILES for i in range(2)]
        write_enhanced_tar(Path(s.output_url) / output_key("enhance", s, shard), segs)
        engine.output.write_bytes(output_key("asr", s, shard), "".join(
            AsrLine(key=f"{k}{shard}", language=lang, status="ok").to_json() + "\n"
            for k, lang in FILES.items()).encode())
        engine.ledger.mark_done("asr", shard, {"model": "bundled:whisper-base"})
        engine.ledger.mark_done("enhance", shard, {"model": "rnnoise"})
    write_result(engine.output, {"spk2file0_0001": "spk1file0_0000"}, shards=[0])
    for shard in (0, 1):
        assert engine.run(shard).record is not None
    tokens = {}
    for shard in (0, 1):
        out = Path(s.output_url) / output_key("tokenize", s, shard)
        tokens |= {x["id"]: x for x in map(json.loads, out.read_text().splitlines())}
    assert len(tokens) == 15 and "spk2file0_0001" not in tokens  # tokenize skipped the copy
    # a dedup run that now covers shard 1 too: export applies it where tokenize could not
    write_result(engine.output, {"spk2file0_0001": "spk1file0_0000",
                                 "spk3file1_0000": "spk1file0_0000"}, shards=[0, 1])
    to = tmp_path / "set"
    res = export(s, s.output_url, str(to), plan=SplitPlan(seed=7, validation_fraction=0.5))
    ds = datasets.load_dataset("json", data_dir=str(to), cache_dir=str(tmp_path / "hf"))
    rows = {r["id"]: (split, r) for split in ds for r in ds[split]}
    assert all(i.endswith(f"@00000{i[8]}") for i in rows)  # corpus ids: key[8] is the shard
    rows = {local_name(i): row for i, row in rows.items()}
    assert set(rows) == set(tokens) - {"spk3file1_0000"}
    assert res.written.lines["train"] == ds["train"].num_rows > 0
    assert res.written.lines["validation"] == ds["validation"].num_rows > 0
    for seg_id, (split, row) in rows.items():
        assert row["codes"]["neu_tokens"] == tokens[seg_id]["codes"]["neu_tokens"]
        # the segment's own language (the sidecars here say English), not its file's
        assert row["language"] == tokens[seg_id]["language"] == "en"
        partner = seg_id[:-1] + ("1" if seg_id.endswith("0") else "0")
        assert partner not in rows or rows[partner][0] == split  # a file's segments together
    card = (to / "README.md").read_text()
    assert "| `duplicate_of` | tokenize | 1 |" in card and "| `duplicate_of` | export | 1 |" in card
    assert "Duplicates removed: 2 segments" in card
