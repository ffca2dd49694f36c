"""The dedup run's local files are a cache of the store: an index file of garbage or with a
damaged page, a damaged local copy of a part, a part gone from the store. Each is rebuilt or
re-indexed from the store, or named; never a "0 duplicates" that keeps every copy."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from common.storage import open_store
from services.dedup.result import DedupResult
from services.dedup.run import PARTS, Deduper, DedupPartError
from services.ops.cli import cli
from tests.services.dedup import helpers as h
from tests.system_packages import ESPEAK, POCKETSPHINX, needs

pytestmark = needs(ESPEAK, POCKETSPHINX)

EXPECTED = {"a_0000@000000": "h_0000@000002", "d_0000@000001": "h_0000@000002",
            "e_0000@000001": "b_0000@000000"}


@pytest.fixture(scope="module")
def corpus() -> dict[int, list[h.Seg]]:
    return h.corpus()


def _root(tmp_path: Path, corpus):
    s = h.settings(tmp_path / "out", tmp_path, dedup_batch_shards=1)
    for i in (0, 1, 2):
        h.add_shard(s, i, corpus[i])
    return s


def _dedup(s) -> tuple[Deduper, dict[str, str]]:
    store = open_store(s.output_url, s)
    d = Deduper(s, store, h.ledger(s))
    d.run()
    res = DedupResult.load(store)
    assert res is not None
    return d, {k: v.duplicate_of for k, v in res.duplicates.items()}


def _damage(path: Path, at: int, n: int) -> None:
    data = bytearray(path.read_bytes())
    data[at:at + n] = os.urandom(n)
    path.write_bytes(bytes(data))


def test_an_index_file_of_garbage_is_rebuilt_not_called_in_use(tmp_path, corpus,
                                                               monkeypatch) -> None:
    s = _root(tmp_path, corpus)
    d, _ = _dedup(s)
    (d.workdir / "index.duckdb").write_bytes(os.urandom(64 * 1024))
    monkeypatch.setenv("ONSEI_SCRATCH_DIR", s.scratch_dir)
    r = CliRunner().invoke(cli, ["dedup", "--output", s.output_url])
    assert r.exit_code == 0 and "in use" not in r.output, r.output
    assert "3 shards, 8 segments: 2 clusters, 3 duplicates" in r.output
    d2, pairs = _dedup(s)  # the rebuilt index is a good one
    assert pairs == EXPECTED and d2.progress.rebuilt is None


def test_an_index_with_a_damaged_page_is_rebuilt(tmp_path, corpus) -> None:
    s = _root(tmp_path, corpus)
    d, _ = _dedup(s)
    path = d.workdir / "index.duckdb"
    _damage(path, 12 * 1024, 256 * 1024)  # past both headers: the blocks' checksums fail
    d2, pairs = _dedup(s)
    assert pairs == EXPECTED and d2.progress.indexed == 0
    assert d2.progress.rebuilt is not None and "index.duckdb" in d2.progress.rebuilt


def test_a_damaged_local_copy_of_a_part_is_fetched_again(tmp_path, corpus) -> None:
    s = _root(tmp_path, corpus)
    d, _ = _dedup(s)
    (d.workdir / "index.duckdb").unlink()  # the parts are read again
    for local in (d.workdir / "parts").glob("*.parquet"):
        local.write_bytes(b"PAR1 not a part")
    _, pairs = _dedup(s)
    assert pairs == EXPECTED


def test_a_damaged_part_in_the_store_is_named(tmp_path, corpus) -> None:
    s = _root(tmp_path, corpus)
    d, _ = _dedup(s)
    shutil.rmtree(d.workdir)  # another machine: the store's copy is the one read
    key = min(open_store(s.output_url, s).list(PARTS))
    (Path(s.output_url) / key).write_bytes(b"PAR1 not a part")
    with pytest.raises(DedupPartError, match=key.replace(".", r"\.")):
        _dedup(s)


@pytest.mark.parametrize("same_machine", [True, False])
def test_a_part_gone_from_the_store_is_indexed_again(tmp_path, corpus, same_machine) -> None:
    s = _root(tmp_path, corpus)
    d, _ = _dedup(s)
    store = open_store(s.output_url, s)
    parts = sorted(store.list(PARTS))
    assert len(parts) == 3  # a batch a shard: shard 2's part holds the pairs with shard 2
    store.delete(parts[2])
    if not same_machine:
        shutil.rmtree(d.workdir)
    d2, pairs = _dedup(s)
    assert pairs == EXPECTED and d2.progress.indexed == 1
    assert len(list(store.list(PARTS))) == 3
    shutil.rmtree(d2.workdir)  # and what the store now holds stands on its own
    d3, pairs = _dedup(s)
    assert pairs == EXPECTED and d3.progress.indexed == 0
