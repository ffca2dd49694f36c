"""Metadata given to ``onsei pack-audio``: beside each file, or in a manifest."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from services.provenance.metadata import ManifestError, load_manifest, metadata_for


def test_manifest_row_wins_over_the_file_beside(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    audio = tmp_path / "sub" / "a.wav"
    audio.write_bytes(b"x")
    (tmp_path / "sub" / "a.json").write_text(json.dumps({"license": "MIT", "owner": "O"}))
    m = tmp_path / "m.jsonl"
    m.write_text(json.dumps({"path": "./sub/a.wav", "license": "CC0-1.0", "date": None}) + "\n")
    rows = load_manifest(m)
    assert metadata_for(audio, "sub/a.wav", rows) == {"license": "CC0-1.0", "owner": "O"}
    c = tmp_path / "m.csv"
    c.write_text("path,license,source\nsub/a.wav,CC-BY-4.0,https://x\n")
    assert load_manifest(c) == {"sub/a.wav": {"license": "CC-BY-4.0", "source": "https://x"}}


@pytest.mark.parametrize("text", ['{"license": "MIT"}\n', "{oops\n", '["a.wav"]\n'])
def test_a_bad_manifest_names_its_line(tmp_path: Path, text: str) -> None:
    m = tmp_path / "m.jsonl"
    m.write_text("\n" + text)
    with pytest.raises(ManifestError, match=r"m\.jsonl:2"):
        load_manifest(m)


def test_pack_audio_carries_the_metadata_to_the_shard(make_settings, tmp_path: Path) -> None:
    import numpy as np
    import soundfile as sf
    from click.testing import CliRunner

    from common.shards.tar import iter_shard
    from services.ops.pack_audio import pack_audio
    from services.provenance.table import write_table

    folder = tmp_path / "in"
    folder.mkdir()
    for name in ("a", "b", "c"):
        sf.write(folder / f"{name}.wav", np.zeros(8000, np.float32), 16000)
    (folder / "a.json").write_text(json.dumps({"license": "CC0-1.0", "url": "https://x/a"}))
    m = tmp_path / "m.csv"
    m.write_text("path,license\nb.wav,cc-by-4.0\n")
    out = tmp_path / "raw"
    got = CliRunner().invoke(pack_audio, [str(folder), "--output", str(out), "--manifest",
                                          str(m), "--no-progress"])
    assert got.exit_code == 0, got.output
    assert "2 files" in got.output  # with provenance metadata
    shard = out / "shard-000000.tar"
    sidecars = {s.key: json.loads(s.files["json"]) for s in iter_shard(shard)}
    assert sidecars["c"].get("provenance") is None
    table = tmp_path / "t.jsonl"
    write_table(shard, table)
    rows = {r["key"]: r for r in map(json.loads, table.read_text().splitlines())}
    assert rows["a"]["licence"] == "CC0-1.0" and rows["b"]["licence"] == "CC-BY-4.0"
    assert rows["c"]["licence"] == "unknown"
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{}\n")
    got = CliRunner().invoke(pack_audio, [str(folder), "--output", str(tmp_path / "r2"),
                                          "--manifest", str(bad), "--no-progress"])
    assert got.exit_code != 0 and "bad.jsonl:1" in got.output
