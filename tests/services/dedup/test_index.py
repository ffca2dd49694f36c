"""The DuckDB index on its own: candidates by shared text key and duration, big buckets left
out, clusters joined transitively, the copy kept chosen by OVRL then shard then id."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from services.dedup.index import ROW_BITS, Index


def _table(rows: list[tuple[str, float, float | None, list[int]]]) -> pa.Table:
    ids, secs, ovrl, bands = zip(*rows)
    return pa.table({"id": list(ids), "seconds": pa.array(secs, pa.float32()),
                     "ovrl": pa.array(ovrl, pa.float32()), "text": [f"t {i}" for i in ids],
                     "bands": pa.array(bands, pa.list_(pa.int64()))})


def seg(shard: int, row: int) -> int:
    return shard << ROW_BITS | row


def test_candidates_share_a_key_and_a_duration(tmp_path: Path) -> None:
    ix = Index(tmp_path / "i.duckdb", 256)
    ix.add_shard(0, _table([("a", 5.0, 3.0, [1, 2]), ("b", 5.2, 3.0, [9, 3]),
                            ("c", 20.0, 3.0, [1, 4]), ("d", 3.0, 3.0, [7])]))
    ix.add_shard(1, _table([("e", 5.5, 3.0, [2, 8]), ("f", 3.1, 3.0, [7]),
                            ("g", 3.1, 3.0, [7])]))
    got = [p for chunk in ix.candidates([1], 1.5, 0.25, max_bucket=10) for p in chunk]
    # a-e share key 2 (durations agree); c shares key 1 with a only (20 s: no); d-f-g key 7
    assert sorted(got) == sorted([(seg(0, 0), seg(1, 0)), (seg(0, 3), seg(1, 1)),
                                  (seg(0, 3), seg(1, 2)), (seg(1, 1), seg(1, 2))])
    got = [p for chunk in ix.candidates([1], 1.5, 0.25, max_bucket=2) for p in chunk]
    assert got == [(seg(0, 0), seg(1, 0))]  # key 7 is held by 3 segments: a stock phrase
    ix.close()


def test_clusters_are_transitive_and_keep_the_best(tmp_path: Path) -> None:
    ix = Index(tmp_path / "i.duckdb", 256)
    ix.add_shard(3, _table([("a", 5.0, None, []), ("b", 5.0, 2.0, []), ("c", 5.0, 2.0, [])]))
    ix.add_shard(1, _table([("d", 5.0, 2.0, []), ("e", 4.0, 3.9, []), ("f", 4.0, None, [])]))
    part = tmp_path / "p.parquet"
    import pyarrow.parquet as pq

    # a chain a-b-c-d (three rounds to join), and e-f
    edges = [(seg(3, 0), seg(3, 1), 0.9), (seg(3, 1), seg(3, 2), 0.8),
             (seg(1, 0), seg(3, 2), 0.7), (seg(1, 1), seg(1, 2), 0.6)]
    a, b, s = zip(*edges)
    pq.write_table(pa.table({"a": pa.array(a, pa.int64()), "b": pa.array(b, pa.int64()),
                             "score": pa.array(s, pa.float32())}), part)
    ix.add_part_file("p", part)
    ix.cluster()
    dups = [d for chunk in ix.duplicates() for d in chunk]
    # b, c, d tie at OVRL 2.0: d is in the earliest shard; a has none; e's 3.9 beats f's none
    assert [(d.id, d.keep) for d in dups] == [("f", "e"), ("a", "d"), ("b", "d"), ("c", "d")]
    assert {d.id: round(d.score, 2) for d in dups} == {"a": 0.9, "b": 0.9, "c": 0.8, "f": 0.6}
    assert [(d.shard, d.keep_shard, d.rank) for d in dups] == [(1, 1, 1), (3, 1, 3), (3, 1, 1),
                                                                (3, 1, 2)]
    assert ix.cluster_totals() == (2, 4, 19.0)
    assert ix.largest(1) == [("d", 1, 4, 20.0, "t d")]
    ix.close()


def _pair_part(tmp_path: Path, ix: Index, a: int, b: int) -> None:
    import pyarrow.parquet as pq

    part = tmp_path / "p.parquet"
    pq.write_table(pa.table({"a": pa.array([a], pa.int64()), "b": pa.array([b], pa.int64()),
                             "score": pa.array([0.9], pa.float32())}), part)
    ix.add_part_file("p", part)


def test_the_copy_kept_is_one_the_policy_passes(tmp_path: Path) -> None:
    """The better OVRL copy is refused by the policy (its quality says multi_speaker): the
    other is kept. With no copy passing, the best is kept as before."""
    ix = Index(tmp_path / "i.duckdb", 256)
    t0 = _table([("same_0000", 5.0, 4.0, [])])
    t1 = _table([("same_0000", 5.0, 3.0, [])])
    ix.add_shard(0, t0.append_column("quality", pa.array(['{"multi_speaker":true}'])))
    ix.add_shard(1, t1.append_column("quality", pa.array(['{"multi_speaker":false}'])))
    _pair_part(tmp_path, ix, seg(0, 0), seg(1, 0))

    def passes(q: str) -> bool:
        return "true" not in q

    ix.cluster(passes)
    dups = [d for chunk in ix.duplicates() for d in chunk]
    assert [(d.id, d.shard, d.keep, d.keep_shard) for d in dups] == [
        ("same_0000", 0, "same_0000", 1)]
    assert (dups[0].quality, dups[0].keep_quality) == ('{"multi_speaker":true}',
                                                       '{"multi_speaker":false}')
    ix.cluster()  # no policy: the best OVRL
    assert [(d.shard, d.keep_shard) for c in ix.duplicates() for d in c] == [(1, 0)]
    ix.cluster(lambda q: False)  # none passes: the best OVRL
    assert [(d.shard, d.keep_shard) for c in ix.duplicates() for d in c] == [(1, 0)]
    ix.close()


def test_an_index_made_before_the_quality_column_opens(tmp_path: Path) -> None:
    """A cache made by the version before: its segments' quality reads as unknown."""
    import duckdb

    path = tmp_path / "i.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE segments (seg BIGINT, id VARCHAR, shard BIGINT, seconds FLOAT,"
                " ovrl FLOAT, text VARCHAR)")
    con.execute("INSERT INTO segments VALUES (1, 'a_0000', 0, 5.0, 3.0, 't')")
    con.close()
    ix = Index(path, 256)
    assert ix.con.execute("SELECT id, quality FROM segments").fetchall() == [("a_0000", None)]
    ix.close()


def test_audio_keys_propose_pairs_only_when_asked(tmp_path: Path) -> None:
    for acoustic, want in ((True, [(seg(0, 0), seg(0, 1))]), (False, [])):
        ix = Index(tmp_path / f"{acoustic}.duckdb", 256, acoustic=acoustic)
        t = _table([("a", 5.0, 3.0, [1]), ("b", 5.0, 3.0, [2])])
        ix.add_shard(0, t.append_column("akeys", pa.array([[7, 8], [9, 8]],
                                                          pa.list_(pa.int64()))))
        assert [p for c in ix.candidates([0], 1.5, 0.25, max_bucket=10) for p in c] == want
        ix.close()


def test_short_audio_keys_propose_pairs_only_when_asked(tmp_path: Path) -> None:
    for short, want in ((True, [(seg(0, 0), seg(0, 1))]), (False, [])):
        ix = Index(tmp_path / f"{short}.duckdb", 256, short=short)
        t = _table([("a", 1.5, 3.0, [1]), ("b", 1.4, 3.0, [2])])
        t = t.append_column("akeys", pa.array([[7], [9]], pa.list_(pa.int64())))
        ix.add_shard(0, t.append_column("skeys", pa.array([[5, 6], [6, 4]],
                                                          pa.list_(pa.int64()))))
        assert [p for c in ix.candidates([0], 1.5, 0.25, max_bucket=10) for p in c] == want
        ix.close()
