"""asr's provenance table: one row per key with a ``.json`` member, read without the audio."""

from __future__ import annotations

import json
from pathlib import Path

from common.shards.tar import ShardWriter
from services.provenance.table import parse_table, write_table


def test_table_of_a_shard(tmp_path: Path) -> None:
    shard = tmp_path / "s.tar"
    with ShardWriter(shard) as w:
        w.write_files("a", {"wav": b"RIFF" + b"\0" * 4000, "json": json.dumps(
            {"source_path": "a.wav", "provenance": {"url": "https://x/a", "license": "MIT"}})
            .encode()})
        w.write_files("b", {"wav": b"RIFF" + b"\0" * 100, "json": b"{not json"})
        w.write_files("c", {"wav": b"RIFF" + b"\0" * 100})  # no sidecar: not in the table
        w.write_files("d", {"wav": b"RIFF", "json": json.dumps({"license": "CC0-1.0",
                                                                "x" * 50: "y" * 300}).encode()})
    out = tmp_path / "t.jsonl"
    assert write_table(shard, out, max_bytes=200) == 3
    table = parse_table(out.read_bytes() + b"\n{broken\n")
    assert sorted(table) == ["a", "b", "d"]
    assert (table["a"].source, table["a"].licence) == ("https://x/a", "MIT")
    assert table["b"].licence == "unknown"
    assert table["d"].licence == "unknown"  # its sidecar is over the size read: not guessed


def test_a_damaged_shard_gives_the_rows_before_the_damage(tmp_path: Path) -> None:
    shard = tmp_path / "s.tar"
    with ShardWriter(shard) as w:
        w.write_files("a", {"wav": b"RIFF", "json": json.dumps({"license": "MIT"}).encode()})
    data = shard.read_bytes()
    (tmp_path / "bad.tar").write_bytes(data[:1536] + b"\x01" * 700)
    out = tmp_path / "t.jsonl"
    assert write_table(tmp_path / "bad.tar", out) == 1
    (tmp_path / "junk.tar").write_bytes(b"not a tar at all" * 10)
    assert write_table(tmp_path / "junk.tar", out) == 0
