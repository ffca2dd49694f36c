"""The duplicate index: DuckDB tables of every indexed segment and its text keys, and the
confirmed pairs. Embedded, out of core: past ``memory_limit_mb`` DuckDB spills to its temp
directory, so the corpus size bounds the disk it needs, never the memory.

A segment's number is ``shard << 20 | row`` (its row in the shard's signature file): the same
on every machine, so the pairs published to the store (services/dedup/run.py) mean the same
segments whoever rebuilds the index from them.

Tables: ``segments(seg, id, shard, seconds, ovrl, text)``, ``bands(key, seg)``,
``edges(a, b, score)`` (a < b, confirmed same recording), ``shards(shard, segments)`` and
``parts(name)`` (the published pair files it holds).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

ROW_BITS = 20

_TABLES = (
    ("CREATE TABLE IF NOT EXISTS segments (seg BIGINT, id VARCHAR, shard BIGINT, seconds FLOAT,"
    " ovrl FLOAT, text VARCHAR)"),
    "CREATE TABLE IF NOT EXISTS bands (key BIGINT, seg BIGINT)",
    "CREATE TABLE IF NOT EXISTS edges (a BIGINT, b BIGINT, score FLOAT)",
    "CREATE TABLE IF NOT EXISTS shards (shard BIGINT, segments INTEGER)",
    "CREATE TABLE IF NOT EXISTS parts (name VARCHAR)",
)


class Index:
    def __init__(self, path: Path, memory_limit_mb: int, threads: int = 0) -> None:
        import duckdb

        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.parent / "duckdb-tmp"
        self.con = duckdb.connect(str(path))
        self.con.execute(f"SET memory_limit = '{int(memory_limit_mb)}MB'")
        self.con.execute(f"SET temp_directory = '{_quote(str(tmp))}'")
        self.con.execute("SET preserve_insertion_order = false")
        if threads:
            self.con.execute(f"SET threads = {int(threads)}")
        for sql in _TABLES:
            self.con.execute(sql)

    def close(self) -> None:
        self.con.close()

    # --- what it holds ------------------------------------------------------------------------
    def shards(self) -> set[int]:
        return {r[0] for r in self.con.execute("SELECT shard FROM shards").fetchall()}

    def parts(self) -> set[str]:
        return {r[0] for r in self.con.execute("SELECT name FROM parts").fetchall()}

    def segment_count(self) -> int:
        return int(self.con.execute("SELECT count(*) FROM segments").fetchone()[0])

    # --- changes (the caller brackets a batch in begin/commit) ---------------------------------
    def begin(self) -> None:
        self.con.execute("BEGIN TRANSACTION")

    def commit(self) -> None:
        self.con.execute("COMMIT")

    def rollback(self) -> None:
        self.con.execute("ROLLBACK")

    def add_shard(self, shard: int, table: Any) -> int:
        """Rows of the shard's signature table (columns id, seconds, ovrl, text, bands)."""
        import pyarrow as pa

        n = table.num_rows
        seg = (np.int64(shard) << ROW_BITS) + np.arange(n, dtype=np.int64)
        t = pa.table({"seg": seg, "id": table.column("id"), "seconds": table.column("seconds"),
                      "ovrl": table.column("ovrl"), "text": table.column("text"),
                      "bands": table.column("bands")})
        self.con.register("incoming", t)
        try:
            self.con.execute("INSERT INTO segments SELECT seg, id, ?, seconds, ovrl, text "
                             "FROM incoming", [shard])
            self.con.execute("INSERT INTO bands SELECT unnest(bands), seg FROM incoming")
        finally:
            self.con.unregister("incoming")
        self.con.execute("INSERT INTO shards VALUES (?, ?)", [shard, n])
        return n

    def remove_shards(self, shards: Iterable[int]) -> None:
        ids = sorted(set(shards))
        if not ids:
            return
        self.con.execute("CREATE OR REPLACE TEMP TABLE gone AS SELECT unnest(?) AS shard", [ids])
        self.con.execute("DELETE FROM segments WHERE shard IN (SELECT shard FROM gone)")
        self.con.execute(f"DELETE FROM bands WHERE (seg >> {ROW_BITS}) IN "
                         "(SELECT shard FROM gone)")
        self.con.execute(f"DELETE FROM edges WHERE (a >> {ROW_BITS}) IN (SELECT shard FROM gone)"
                         f" OR (b >> {ROW_BITS}) IN (SELECT shard FROM gone)")
        self.con.execute("DELETE FROM shards WHERE shard IN (SELECT shard FROM gone)")

    def add_edges(self, edges: list[tuple[int, int, float]]) -> None:
        if edges:
            import pyarrow as pa

            a, b, s = zip(*edges)
            t = pa.table({"a": pa.array(a, pa.int64()), "b": pa.array(b, pa.int64()),
                          "score": pa.array(s, pa.float32())})
            self.con.register("incoming_edges", t)
            try:
                self.con.execute("INSERT INTO edges SELECT a, b, score FROM incoming_edges")
            finally:
                self.con.unregister("incoming_edges")

    def add_part(self, name: str) -> None:
        self.con.execute("INSERT INTO parts VALUES (?)", [name])

    # --- matching -----------------------------------------------------------------------------
    def candidates(self, new_shards: Iterable[int], slack_seconds: float, slack_fraction: float,
                   max_bucket: int) -> list[tuple[int, int]]:
        """Pairs (a < b) with at least one segment of ``new_shards`` that share a text key held
        by at most ``max_bucket`` segments and whose durations agree within the slack."""
        ids = sorted(set(new_shards))
        if not ids:
            return []
        con = self.con
        con.execute("CREATE OR REPLACE TEMP TABLE fresh AS SELECT unnest(?) AS shard", [ids])
        con.execute(f"CREATE OR REPLACE TEMP TABLE nb AS SELECT key, seg FROM bands "
                    f"WHERE (seg >> {ROW_BITS}) IN (SELECT shard FROM fresh)")
        con.execute("CREATE OR REPLACE TEMP TABLE usable AS SELECT key FROM bands "
                    "WHERE key IN (SELECT key FROM nb) GROUP BY key "
                    "HAVING count(*) BETWEEN 2 AND ?", [max_bucket])
        rows = con.execute(
            "WITH p AS (SELECT DISTINCT least(n.seg, o.seg) AS a, greatest(n.seg, o.seg) AS b "
            "  FROM nb n JOIN bands o ON n.key = o.key "
            "  WHERE n.seg <> o.seg AND n.key IN (SELECT key FROM usable)) "
            "SELECT p.a, p.b FROM p JOIN segments sa ON sa.seg = p.a "
            "JOIN segments sb ON sb.seg = p.b "
            "WHERE abs(sa.seconds - sb.seconds) <= ? + ? * least(sa.seconds, sb.seconds) "
            "ORDER BY p.b >> 20, p.a >> 20, p.a, p.b",
            [slack_seconds, slack_fraction]).fetchall()
        return [(int(a), int(b)) for a, b in rows]

    # --- the result ---------------------------------------------------------------------------
    def edges(self) -> list[tuple[int, int, float]]:
        return [(int(a), int(b), float(s)) for a, b, s in
                self.con.execute("SELECT a, b, score FROM edges").fetchall()]

    def segment_info(self, segs: Iterable[int]) -> dict[int, tuple[str, int, float, float | None,
                                                                   str]]:
        """seg -> (id, shard, seconds, ovrl, text) for ``segs``."""
        ids = sorted(set(segs))
        if not ids:
            return {}
        self.con.execute("CREATE OR REPLACE TEMP TABLE wanted AS SELECT unnest(?) AS seg", [ids])
        rows = self.con.execute("SELECT s.seg, s.id, s.shard, s.seconds, s.ovrl, s.text "
                                "FROM segments s JOIN wanted USING (seg)").fetchall()
        return {int(r[0]): (r[1], int(r[2]), float(r[3]), r[4], r[5]) for r in rows}


def _quote(s: str) -> str:
    return s.replace("'", "''")
