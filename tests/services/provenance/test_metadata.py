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
