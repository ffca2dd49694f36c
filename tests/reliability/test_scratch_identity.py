"""A download in the shared scratch dir is another run's only if it is the same file (issue 25,
item 4): ``cd A && onsei run --input raw --output out`` then the same from ``B``, both shards of
one size and mtime, once had run B transcribe run A's audio. The namespace now comes from where
the input and output really are, and a local copy's source is checked by content too."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from common.stages.engine import Engine
from common.stages.prefetch import prefetch_root
from common.storage import open_store
from common.storage.location import location
from services.stages import PIPELINE

SIZE = 3 * 1024 * 1024  # over two MiB: the identity hashes each end, not the middle
MTIME_NS = 1_700_000_000_123_456_789


def _shard(path: Path, fill: bytes, middle: bytes = b"") -> None:
    """A shard-sized file of ``fill``, ``middle`` written at its centre, a fixed mtime."""
    data = bytearray(fill * (SIZE // len(fill)))
    data[SIZE // 2:SIZE // 2 + len(middle)] = middle
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(bytes(data))
    os.utime(path, ns=(MTIME_NS, MTIME_NS))


def _fetch_in(where: Path, scratch: Path, make_settings) -> bytes:
    """What run ``where`` (relative ``raw`` / ``out``, run from ``where``) gets as shard 0."""
    os.chdir(where)
    s = make_settings(input_url="raw", output_url="out", scratch_dir=str(scratch))
    got = Engine(s, PIPELINE, "asr", read_ahead=True).fetch_ahead(0)
    return got["shard"].read_bytes()[:1]


def test_same_relative_paths_from_two_dirs_are_two_runs(make_settings, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # restored after the test
    scratch = tmp_path / "scratch"
    for run, fill in (("A", b"a"), ("B", b"b")):
        _shard(tmp_path / run / "raw" / "shard-000000.tar", fill)
    assert _fetch_in(tmp_path / "A", scratch, make_settings) == b"a"
    assert _fetch_in(tmp_path / "B", scratch, make_settings) == b"b"  # was b"a": A's audio
    assert _fetch_in(tmp_path / "A", scratch, make_settings) == b"a"


def test_a_source_rewritten_with_the_same_size_and_mtime_is_fetched_again(make_settings,
                                                                          tmp_path):
    s = make_settings(input_url=str(tmp_path / "raw"), scratch_dir=str(tmp_path / "scratch"))
    src = tmp_path / "raw" / "shard-000000.tar"
    eng = Engine(s, PIPELINE, "asr", read_ahead=True)
    for fill in (b"1", b"2"):
        _shard(src, fill)  # `cp -p` of another shard over it: same size, same mtime
        assert eng.fetch_ahead(0)["shard"].read_bytes()[:1] == fill


def test_identity_is_size_mtime_and_both_ends(tmp_path):
    store = open_store(str(tmp_path))
    _shard(tmp_path / "x", b"x")
    first = store.identity("x")
    assert first.startswith(f"{SIZE}:{MTIME_NS}:")
    _shard(tmp_path / "x", b"x", middle=b"changed in the middle")
    assert store.identity("x") == first  # the middle is not read: 2 MiB per check, not all
    _shard(tmp_path / "x", b"y")
    assert store.identity("x") != first


def test_location_is_where_a_url_really_is(tmp_path, monkeypatch):
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    monkeypatch.chdir(tmp_path)
    assert location("real") == location(str(tmp_path / "real")) == location("link") == \
        location(f"file://{tmp_path}/real")
    assert location("s3://b/raw", "http://minio:9000") != location("s3://b/raw", None)
    assert location("s3://b/raw/") == location("s3://b/raw")
    monkeypatch.chdir(tmp_path / "real")
    assert location("real") != location(str(tmp_path / "real"))


@pytest.mark.parametrize("cwd", ["A", "B"])
def test_prefetch_root_differs_by_working_directory(cwd, make_settings, tmp_path, monkeypatch):
    (tmp_path / cwd).mkdir()
    monkeypatch.chdir(tmp_path / cwd)
    here = prefetch_root(make_settings(input_url="raw", output_url="out"), "asr")
    monkeypatch.chdir(tmp_path)
    assert here != prefetch_root(make_settings(input_url="raw", output_url="out"), "asr")
