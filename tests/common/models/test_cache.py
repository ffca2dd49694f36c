"""The one completeness scheme of model cache entries (common/models/cache.py): per-node fetch
under the entry's lock, published whole with its manifest; per-worker lookup that never sees
half an entry."""

from __future__ import annotations

import json
import multiprocessing
import time
from pathlib import Path

import pytest

from common.models.cache import MANIFEST, cached_entry, fetch_entry, list_entries


def _fill(d: Path) -> None:
    (d / "weights.bin").write_bytes(b"w" * 100)
    (d / "config.json").write_text("{}")


def test_a_fetch_publishes_the_entry_whole_with_its_manifest(tmp_path: Path) -> None:
    dest = tmp_path / "cache" / "org--model"
    seen: list[bool] = []

    def fill(d: Path) -> None:
        _fill(d)
        seen.append(dest.exists())  # mid-fetch: the entry is not there yet

    assert fetch_entry(dest, fill, "org/model") == dest
    assert seen == [False]
    manifest = json.loads((dest / MANIFEST).read_text())
    assert set(manifest["files"]) == {"weights.bin", "config.json"}
    assert manifest["files"]["weights.bin"]["size"] == 100
    assert [p.name for p in dest.parent.iterdir() if p.name.endswith(".fetching")] == []
    assert cached_entry(dest) == dest
    assert cached_entry(dest, ["weights.bin"]) == dest
    assert cached_entry(dest, ["decoder_cuda.pt"]) is None  # whole, but not what this needs


def test_fetched_once_then_found(tmp_path: Path) -> None:
    dest = tmp_path / "e"
    calls: list[Path] = []
    fetch_entry(dest, lambda d: calls.append(d) or _fill(d), "e")
    fetch_entry(dest, lambda d: calls.append(d) or _fill(d), "e")
    assert len(calls) == 1


def test_a_crashed_fetch_leaves_no_entry_and_is_resumed(tmp_path: Path) -> None:
    dest = tmp_path / "e"

    def crash(d: Path) -> None:
        (d / "weights.bin").write_bytes(b"w" * 100)
        raise OSError("connection reset")

    with pytest.raises(OSError):
        fetch_entry(dest, crash, "e")
    assert not dest.exists() and cached_entry(dest) is None
    assert list_entries(str(tmp_path), None) == []  # the staging directory is no entry
    kept: list[bool] = []

    def resume(d: Path) -> None:
        kept.append((d / "weights.bin").is_file())  # what the crashed fetch got is there
        _fill(d)

    fetch_entry(dest, resume, "e")
    assert kept == [True] and cached_entry(dest) == dest


def test_an_entry_placed_by_hand_is_used_when_it_holds_the_required_files(tmp_path) -> None:
    dest = tmp_path / "by-hand"
    dest.mkdir()
    (dest / "model.bin").write_bytes(b"x")
    assert cached_entry(dest, ["model.bin", "config.json"]) is None
    (dest / "config.json").write_text("{}")
    assert cached_entry(dest, ["model.bin", "config.json"]) == dest
    assert cached_entry(dest) == dest  # nothing required: any model file
    calls: list[Path] = []
    assert fetch_entry(dest, calls.append, "x", ["model.bin"]) == dest and calls == []


def _slow_fetch(dest: str, log: str) -> None:
    def fill(d: Path) -> None:
        with open(log, "a") as f:
            f.write("fill\n")
        time.sleep(0.5)
        _fill(d)

    fetch_entry(Path(dest), fill, "slow")


def test_processes_of_a_node_fetch_once_and_wait_for_it(tmp_path: Path) -> None:
    dest, log = tmp_path / "e", tmp_path / "log"
    ctx = multiprocessing.get_context("spawn")
    ps = [ctx.Process(target=_slow_fetch, args=(str(dest), str(log))) for _ in range(3)]
    for p in ps:
        p.start()
    time.sleep(0.2)
    assert cached_entry(dest) is None  # still fetching: the lookup sees no entry
    for p in ps:
        p.join(60)
    assert [p.exitcode for p in ps] == [0, 0, 0]
    assert log.read_text() == "fill\n"
    assert cached_entry(dest) == dest
