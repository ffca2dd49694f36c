"""An exported line's language is its segment's own (a file may switch languages): the tokens
line's, else the asr segment's, else the asr line's (lines written before segments had one)."""

from __future__ import annotations

import json
from pathlib import Path

from common.storage import open_store
from services.ops.export.run import export
from services.ops.export.write import SplitPlan
from services.records import AsrLine, AsrSegment
from services.stages import PIPELINE
from tests.services.ops.export.synth import default_run, lines_of, write_run


def test_each_line_carries_its_segments_language(make_settings, tmp_path: Path) -> None:
    s = make_settings()
    store = open_store(s.output_url, s)
    run = default_run(files_per_shard=2, shards=1)  # two English files, three segments each
    write_run(store, s, run)
    asr_key = PIPELINE.output_key("asr", s, 0)
    lines = [AsrLine.from_json(x) for x in store.read_bytes(asr_key).decode().splitlines()]
    lines[0] = lines[0].model_copy(update={"segments": [
        AsrSegment(idx=1, start=1.0, end=2.0, kept=True, language="ja")]})
    store.write_bytes(asr_key, "".join(x.to_json() + "\n" for x in lines).encode())
    tok_key = PIPELINE.output_key("tokenize", s, 0)
    body = [json.loads(x) for x in store.read_bytes(tok_key).decode().splitlines()]
    for row in body:
        if row["id"] == "000001_0002":
            row["language"] = "ja"
    store.write_bytes(tok_key, "".join(json.dumps(r) + "\n" for r in body).encode())

    export(s, s.output_url, str(tmp_path / "set"), plan=SplitPlan(validation_fraction=0.0))
    got = {x["id"].split("@")[0]: x["language"] for x in lines_of(tmp_path / "set")["train"]}
    assert got == {"000000_0000": "en", "000000_0001": "ja", "000000_0002": "en",
                   "000001_0000": "en", "000001_0001": "en", "000001_0002": "ja"}
