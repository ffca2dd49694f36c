"""pack-audio: a folder tree -> shards, read back whole; local and s3:// outputs."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from click.testing import CliRunner

from common.shards.tar import MemberError, Sample, iter_shard
from common.storage import open_store
from services.ops.pack_audio import KeyMaker, pack, pack_audio, parse_size, safe_key


def _wav(path: Path, seconds: float, sr: int = 16000, fmt: str = "WAV", seed: int = 0) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    x = 0.1 * np.random.default_rng(seed).standard_normal(int(seconds * sr))
    sf.write(path, x, sr, format=fmt)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "in"
    _wav(root / "a.wav", 1.0, seed=1)
    _wav(root / "a.flac", 0.5, fmt="FLAC", seed=2)  # same stem as a.wav: collision
    _wav(root / "sub" / "a.wav", 0.7, seed=3)
    _wav(root / "sub__a.wav", 0.2, seed=4)  # its key is what sub/a.wav becomes: collision
    _wav(root / "deep" / "er" / "日本語 ファイル.wav", 0.3, seed=5)
    _wav(root / "deep" / "er" / "x.y.z.WAV", 0.4, seed=6)
    (root / "notes.txt").write_text("not audio")
    (root / "bad.mp3").write_bytes(b"junk" * 10)
    (root / ".DS_Store").write_bytes(b"\0")
    return root


AUDIO = ["a.wav", "a.flac", "sub/a.wav", "sub__a.wav", "deep/er/日本語 ファイル.wav",
         "deep/er/x.y.z.WAV"]


def _read_back(shards: list[Path]) -> dict[str, tuple[str, bytes, dict]]:
    """source path -> (key, audio bytes, sidecar)."""
    out: dict[str, tuple[str, bytes, dict]] = {}
    for shard in shards:
        for item in iter_shard(shard):
            assert not isinstance(item, MemberError), item
            assert isinstance(item, Sample) and set(item.files) - {"json"}
            meta = json.loads(item.files.pop("json"))
            ((ext, data),) = item.files.items()
            assert meta["source_path"] not in out, "packed twice"
            assert ext == meta["source_path"].rsplit(".", 1)[1].lower()
            out[meta["source_path"]] = (item.key, data, meta)
    return out


def _check(tree: Path, got: dict) -> None:
    assert sorted(got) == sorted(AUDIO)
    keys = [k for k, _, _ in got.values()]
    assert len(set(keys)) == len(keys)
    for rel, (key, data, meta) in got.items():
        assert data == (tree / rel).read_bytes()
        assert all(c.isascii() and (c.isalnum() or c in "_-") for c in key), key
        assert meta["source_bytes"] == len(data)
        assert meta["duration_seconds"] == pytest.approx(sf.info(tree / rel).duration, abs=0.01)


def test_pack_round_trip_local(tree: Path, tmp_path: Path, make_settings) -> None:
    settings = make_settings()
    out = tmp_path / "shards"
    summary = pack(tree, str(out), settings, shard_size=40_000, start_id=7, progress=False)
    names = sorted(p.name for p in out.iterdir())
    assert names == summary.shards and len(names) > 2
    assert names[0] == "shard-000007.tar"
    got = _read_back([out / n for n in names])
    _check(tree, got)
    assert got["a.flac"][0] == "a" and got["a.wav"][0] == "a-2"  # sorted walk order
    assert got["sub__a.wav"][0] == "sub__a" and got["sub/a.wav"][0] == "sub__a-2"
    assert summary.files == 6 and summary.skipped == {"hidden": 1, "not_audio": 1, "undecodable": 1}
    assert summary.seconds == pytest.approx(3.1, abs=0.01)
    for n in names:  # one file bigger than the target would get a shard alone; none is here
        assert (out / n).stat().st_size <= 40_000 + 10240
    assert not list((tmp_path / "scratch").rglob("*.tar"))  # scratch is cleaned up


def test_pack_to_s3(tree: Path, tmp_path: Path, make_settings, s3_bucket: str) -> None:
    pytest.importorskip("common.storage.s3")
    settings = make_settings()
    url = f"s3://{s3_bucket}/raw"
    summary = pack(tree, url, settings, shard_size=10**9, progress=False)
    store = open_store(url, settings)
    assert list(store.list("")) == ["shard-000000.tar"] == summary.shards
    local = store.get_file("shard-000000.tar", tmp_path / "dl" / "s.tar")
    _check(tree, _read_back([local]))


def test_cli_refuses_to_overwrite(tree: Path, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("ONSEI_SCRATCH_DIR", str(tmp_path / "scratch"))
    out = tmp_path / "o"
    runner = CliRunner()
    r = runner.invoke(pack_audio, [str(tree), "--output", str(out), "--no-progress"])
    assert r.exit_code == 0, r.output
    assert "files" in r.output and "shard-000000.tar" in r.output and "not_audio" in r.output
    before = (out / "shard-000000.tar").read_bytes()
    r = runner.invoke(pack_audio, [str(tree), "--output", str(out), "--no-progress"])
    assert r.exit_code != 0 and "already exist" in r.output
    assert (out / "shard-000000.tar").read_bytes() == before
    r = runner.invoke(pack_audio, [str(tree), "-o", str(out), "--start-id", "1", "--no-progress"])
    assert r.exit_code == 0 and (out / "shard-000001.tar").exists()
    r = runner.invoke(pack_audio, [str(tree), "-o", str(out), "--shard-size", "lots"])
    assert r.exit_code == 2 and "not a size" in r.output
    empty = tmp_path / "empty"
    empty.mkdir()
    r = runner.invoke(pack_audio, [str(empty), "-o", str(tmp_path / "o2"), "--no-progress"])
    assert r.exit_code == 1 and "no audio files" in r.output


def test_keys_and_sizes() -> None:
    assert parse_size("1GB") == 10**9 and parse_size("512MiB") == 2**29
    assert parse_size("1.5k") == 1500 and parse_size("2000") == 2000
    for bad in ("", "0", "-1GB", "1XB"):
        with pytest.raises(ValueError):
            parse_size(bad)
    assert safe_key("a b/Ünï.take2.wav") == "a_b__Uni_take2"
    assert safe_key("ファイル.wav") != safe_key("ほか.wav")  # non-latin names stay apart
    assert len(safe_key("x" * 500 + ".wav")) <= 150
    km = KeyMaker()
    assert [km(r) for r in ("a.wav", "a.mp3", "a-2.wav", "a.ogg")] == ["a", "a-2", "a-2-2", "a-3"]


def test_example_shard_is_sound() -> None:
    """The shard shipped in examples/ (made by examples/make_example.sh) reads and decodes."""
    from common.shards.audio import decode_audio

    shard = Path(__file__).resolve().parents[3] / "examples" / "raw" / "shard-000000.tar"
    assert shard.stat().st_size < 1_500_000
    seconds = {}
    for item in iter_shard(shard):
        assert isinstance(item, Sample), item
        ((_ext, data),) = [(e, d) for e, d in item.files.items() if e != "json"]
        seconds[item.key] = decode_audio(data, 16000).size / 16000
    assert set(seconds) == {"en__sentence_one", "en__sentence_two", "ja__aisatsu", "es__frase",
                            "silence"}
    assert seconds["en__sentence_one"] >= 3 and seconds["en__sentence_two"] >= 3
