"""The card's "Loading" recipe, run as the card writes it, on every kind of export: tokens,
``--no-tokens`` and ``--with-audio`` (where a json builder given the whole directory would read
the tars as JSON). ``audio_tar`` of a ``--no-tokens`` line is relative to the output root."""

from __future__ import annotations

import re
import tarfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from common.storage import open_store
from services.ops.cli import cli
from tests.services.ops.export.synth import default_run, lines_of, write_run
from tests.services.ops.export.test_export_audio import _real_audio


def _recipe(card: str, root: Path) -> dict:
    (code,) = re.findall(r"```python\n(.*?)```", card, re.DOTALL)
    assert 'root = "."' in code, code
    scope: dict = {}
    exec(code.replace('root = "."', f"root = {str(root)!r}"), scope)  # noqa: S102 - the card's
    return scope


@pytest.mark.parametrize("kind", ["tokens", "no-tokens", "with-audio"])
def test_the_cards_recipe_loads_the_export(make_settings, tmp_path: Path, monkeypatch,
                                           kind: str) -> None:
    s = make_settings()
    store = open_store(s.output_url, s)
    write_run(store, s, default_run(files_per_shard=4, shards=2), tokens=kind != "no-tokens")
    if kind == "with-audio":
        _real_audio(store, s, 2)
    monkeypatch.setenv("ONSEI_OUTPUT_URL", s.output_url)
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    to = tmp_path / "set"
    flags = {"tokens": [], "no-tokens": ["--no-tokens"],
             "with-audio": ["--with-audio", "--shard-size", "5"]}[kind]
    res = CliRunner().invoke(cli, ["export", "--to", str(to), "--seed", "1",
                                   "--validation-fraction", "0.3", *flags])
    assert res.exit_code == 0, res.output
    lines = lines_of(to)
    assert lines["validation"] and lines["train"]
    card = (to / "README.md").read_text()
    got = _recipe(card, to)
    for split, rows in lines.items():
        assert sorted(got["lines"][split]["id"]) == sorted(r["id"] for r in rows), split
    assert ("audio" in got) == (kind == "with-audio") == ("webdataset" in card)
    if kind == "with-audio":
        audio = got["audio"]
        for split, rows in lines.items():
            ids = [x["id"] for x in audio[split]["json"]]
            assert sorted(ids) == sorted(r["id"] for r in rows), split
        assert audio["train"][0]["flac"] is not None  # decoded
    if kind == "no-tokens":
        x = lines["train"][0]
        assert x["audio_tar"] == "enhanced/shard-000000.tar" or \
            x["audio_tar"] == "enhanced/shard-000001.tar", x  # relative to the output root
        with tarfile.open(Path(s.output_url) / x["audio_tar"]) as tf:
            assert x["audio_member"] in tf.getnames()
