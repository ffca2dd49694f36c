"""The duplicate index: DuckDB tables of every indexed segment and its text keys, and the
confirmed pairs. Embedded, out of core: past ``memory_limit_mb`` DuckDB spills to its temp
directory, so the corpus size bounds the disk it needs, never the memory.

A segment's number is ``shard << 20 | row`` (its row in the shard's signature file): the same
on every machine, so the pairs published to the store (services/dedup/run.py) mean the same
segments whoever rebuilds the index from them.

Tables: ``segments(seg, id, shard, seconds, ovrl, text, quality)`` (``id``: within its shard,
as the signature file has it; ``quality``: the filterable block's JSON, null when unknown),
``bands(key, seg)`` (the text's and, with ``acoustic``, the audio's LSH keys: two families that
never collide),
``edges(a, b, score)`` (a < b, confirmed same recording), ``shards(shard, segments)`` and
``parts(name)`` (the published pair files it holds).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

ROW_BITS = 20


class IndexBusy(RuntimeError):
    """The index file is locked by another process."""


class IndexInputError(ValueError):
    """A signature file DuckDB could not read (a damaged page past the footer)."""


class IndexDamaged(RuntimeError):
    """The index file is not a DuckDB database, or one of its blocks fails its checksum. It is
    a cache of the store: the caller removes it and builds it again."""

    def __init__(self, path: Path, error: BaseException) -> None:
        super().__init__(f"{path}: {type(error).__name__}: {str(error)[:160]}")


def is_damage(e: BaseException) -> bool:
    """A DuckDB error that a damaged index file gives (its own lock held elsewhere is not)."""
    import duckdb

    text = str(e)
    if isinstance(e, duckdb.IOException):
        return "not a valid DuckDB database file" in text
    return isinstance(e, duckdb.Error) and (
        text.startswith("Corrupt database file") or "INTERNAL Error" in text
        or isinstance(e, duckdb.SerializationException))


def discard(path: Path) -> None:
    """The index file and its write-ahead log."""
    for p in (path, path.with_name(path.name + ".wal")):
        p.unlink(missing_ok=True)

_TABLES = (
    ("CREATE TABLE IF NOT EXISTS segments (seg BIGINT, id VARCHAR, shard BIGINT, seconds FLOAT,"
    " ovrl FLOAT, text VARCHAR)"),
    "CREATE TABLE IF NOT EXISTS bands (key BIGINT, seg BIGINT)",
    "CREATE TABLE IF NOT EXISTS edges (a BIGINT, b BIGINT, score FLOAT)",
    "CREATE TABLE IF NOT EXISTS shards (shard BIGINT, segments INTEGER)",
    "CREATE TABLE IF NOT EXISTS parts (name VARCHAR)",
    # an index made before the column: its rows' quality is unknown (null)
    "ALTER TABLE segments ADD COLUMN IF NOT EXISTS quality VARCHAR",
)
CLUSTER_CHUNK = 100_000  # clustered segments judged by the filter policy at a time


class Copy(NamedTuple):
    """A copy not kept (:meth:`Index.duplicates`): ids within their shards, ``rank`` its place
    in its cluster's order (the kept one is 0), qualities as JSON (None: unknown)."""

    id: str
    shard: int
    keep: str
    keep_shard: int
    score: float
    seconds: float
    rank: int
    quality: str | None
    keep_quality: str | None


class Index:
    def __init__(self, path: Path, memory_limit_mb: int, threads: int = 0,
                 acoustic: bool = True, short: bool = True) -> None:
        import duckdb

        self.acoustic = acoustic
        self.short = short
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.parent / "duckdb-tmp"
        try:
            self.con = duckdb.connect(str(path))
        except duckdb.Error as e:
            if is_damage(e):
                raise IndexDamaged(path, e) from None
            raise IndexBusy(f"the dedup index {path} is in use (another `onsei dedup` on this "
                            f"output root?): {str(e)[:120]}") from None
        try:
            self.con.execute(f"SET memory_limit = '{int(memory_limit_mb)}MB'")
            self.con.execute(f"SET temp_directory = '{_quote(str(tmp))}'")
            self.con.execute("SET preserve_insertion_order = false")
            self.con.execute("SET enable_progress_bar = false")
            if threads:
                self.con.execute(f"SET threads = {int(threads)}")
            for sql in _TABLES:
                self.con.execute(sql)
            # every table read once: a damaged block is found here, not halfway through a run
            for table in ("segments", "bands", "edges", "shards", "parts"):
                self.con.execute(f"SELECT count(*), max(hash(t)) FROM {table} t").fetchall()
        except duckdb.Error as e:
            self.con.close()
            if is_damage(e):
                raise IndexDamaged(path, e) from None
            raise

    def close(self) -> None:
        self.con.close()

    def _one(self, sql: str) -> tuple[Any, ...]:
        row = self.con.execute(sql).fetchone()
        assert row is not None  # an aggregate always gives one row
        return row

    # --- what it holds ------------------------------------------------------------------------
    def shards(self) -> set[int]:
        return {r[0] for r in self.con.execute("SELECT shard FROM shards").fetchall()}

    def parts(self) -> set[str]:
        return {r[0] for r in self.con.execute("SELECT name FROM parts").fetchall()}

    def segment_count(self) -> int:
        return int(self._one("SELECT count(*) FROM segments")[0])

    # --- changes: each in a transaction of its own ---------------------------------------------
    def begin(self) -> None:
        self.con.execute("BEGIN TRANSACTION")

    def commit(self) -> None:
        self.con.execute("COMMIT")

    def rollback(self) -> None:
        self.con.execute("ROLLBACK")

    def _keys(self, columns: list[str]) -> str:
        """The key lists a segment is indexed under: its text's, and its audio's when on."""
        keys = ["bands"]
        if self.acoustic and "akeys" in columns:
            keys.append("akeys")
            if self.short and "skeys" in columns:
                keys.append("skeys")
        out = keys[0]
        for k in keys[1:]:  # two at a time: DuckDB before 1.2 takes no more
            out = f"list_concat({out}, {k})"
        return out

    def add_shard(self, shard: int, source: Path | Any) -> int:
        """A shard's signatures, from its Parquet file (read by DuckDB, in parallel) or an Arrow
        table with the same columns, in one transaction of its own: all its rows or none.
        Raises :class:`IndexInputError` when the file cannot be read."""
        import duckdb
        import pyarrow as pa

        from services.dedup.signature import has_quality

        if isinstance(source, Path):
            rel = f"read_parquet('{_quote(str(source))}', file_row_number = true)"
            row = "file_row_number"
            keys = self._keys(["akeys", "skeys"])
            quality = "quality" if has_quality(source) else "NULL"
        else:
            keys = self._keys(source.column_names)
            quality = "quality" if "quality" in source.column_names else "NULL"
            source = source.append_column("row", pa.array(range(source.num_rows), pa.int64()))
            self.con.register("incoming_arrow", source)
            rel, row = "incoming_arrow", "row"
        self.begin()
        try:
            self.con.execute(
                f"CREATE OR REPLACE TEMP TABLE incoming AS SELECT (CAST(? AS BIGINT) << "
                f"{ROW_BITS}) + {row} AS seg, id, seconds, ovrl, text, {keys} AS keys, "
                f"CAST({quality} AS VARCHAR) AS quality FROM {rel}", [shard])
            n = int(self._one("SELECT count(*) FROM incoming")[0])
            self.con.execute("INSERT INTO segments (seg, id, shard, seconds, ovrl, text, "
                             "quality) SELECT seg, id, ?, seconds, ovrl, text, quality "
                             "FROM incoming", [shard])
            self.con.execute("INSERT INTO bands SELECT unnest(keys), seg FROM incoming")
            self.con.execute("INSERT INTO shards VALUES (?, ?)", [shard, n])
            self.con.execute("DROP TABLE incoming")
        except duckdb.Error as e:
            self.rollback()
            raise IndexInputError(f"corrupt: {type(e).__name__}: {str(e)[:160]}") from None
        except BaseException:
            self.rollback()
            raise
        finally:
            if rel == "incoming_arrow":
                self.con.unregister("incoming_arrow")
        self.commit()
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

    def add_part_file(self, name: str, path: Path) -> None:
        """A published part's confirmed pairs (its local copy), and its name: both or none.
        Raises :class:`IndexInputError` when the file cannot be read."""
        import duckdb

        self.begin()
        try:
            self.con.execute(f"INSERT INTO edges SELECT a, b, score FROM "
                             f"read_parquet('{_quote(str(path))}')")
            self.con.execute("INSERT INTO parts VALUES (?)", [name])
        except duckdb.Error as e:
            self.rollback()
            raise IndexInputError(f"corrupt: {type(e).__name__}: {str(e)[:160]}") from None
        except BaseException:
            self.rollback()
            raise
        self.commit()

    def forget_parts(self, names: Iterable[str]) -> None:
        """Part names no longer published (their pairs go with their shards)."""
        for name in sorted(names):
            self.con.execute("DELETE FROM parts WHERE name = ?", [name])

    # --- matching -----------------------------------------------------------------------------
    def candidates(self, new_shards: Iterable[int], slack_seconds: float, slack_fraction: float,
                   max_bucket: int, chunk: int = 100_000) -> Iterator[list[tuple[int, int]]]:
        """Pairs (a < b) with at least one segment of ``new_shards`` that share a key held
        by at most ``max_bucket`` segments and whose durations agree within the slack; sorted
        by shard (the fingerprints are read a shard at a time), ``chunk`` at a time. The
        connection runs nothing else until they are all taken."""
        ids = sorted(set(new_shards))
        if not ids:
            return
        con = self.con
        con.execute("CREATE OR REPLACE TEMP TABLE fresh AS SELECT unnest(?) AS shard", [ids])
        con.execute(f"CREATE OR REPLACE TEMP TABLE nb AS SELECT key, seg FROM bands "
                    f"WHERE (seg >> {ROW_BITS}) IN (SELECT shard FROM fresh)")
        con.execute("CREATE OR REPLACE TEMP TABLE usable AS SELECT key FROM bands "
                    "WHERE key IN (SELECT key FROM nb) GROUP BY key "
                    "HAVING count(*) BETWEEN 2 AND ?", [max_bucket])
        cur = con.execute(
            "WITH p AS (SELECT DISTINCT least(n.seg, o.seg) AS a, greatest(n.seg, o.seg) AS b "
            "  FROM nb n JOIN bands o ON n.key = o.key "
            "  WHERE n.seg <> o.seg AND n.key IN (SELECT key FROM usable)) "
            "SELECT p.a, p.b FROM p JOIN segments sa ON sa.seg = p.a "
            "JOIN segments sb ON sb.seg = p.b "
            "WHERE abs(sa.seconds - sb.seconds) <= ? + ? * least(sa.seconds, sb.seconds) "
            f"ORDER BY p.b >> {ROW_BITS}, p.a >> {ROW_BITS}, p.a, p.b",
            [slack_seconds, slack_fraction])
        while rows := cur.fetchmany(chunk):
            yield [(int(a), int(b)) for a, b in rows]

    # --- the result ---------------------------------------------------------------------------
    def cluster(self, passes: Callable[[str], bool] | None = None) -> None:
        """Group the confirmed pairs into clusters (connected components, by propagating the
        smallest segment number until nothing changes: copies form small groups, so a few
        rounds), and order each: first the copies ``passes`` (the filter policy, given a
        quality block's JSON) lets through (a copy of unknown quality passes), then the best
        OVRL after restoration (none counts below any), ties by the earliest shard, then the
        id. The first is the copy kept: a recording with a passing copy keeps one. Fills
        ``members``."""
        con = self.con
        con.execute("CREATE OR REPLACE TEMP TABLE und AS SELECT a AS x, b AS y FROM edges "
                    "UNION ALL SELECT b, a FROM edges")
        con.execute("CREATE OR REPLACE TEMP TABLE lab AS SELECT x AS seg, min(least(x, y)) AS l "
                    "FROM und GROUP BY x")
        while True:
            con.execute("CREATE OR REPLACE TEMP TABLE lab2 AS SELECT u.x AS seg, "
                        "least(min(n.l), any_value(m.l)) AS l FROM und u "
                        "JOIN lab n ON n.seg = u.y JOIN lab m ON m.seg = u.x GROUP BY u.x")
            changed = self._one("SELECT count(*) FROM lab2 JOIN lab USING (seg) "
                                "WHERE lab2.l <> lab.l")[0]
            con.execute("CREATE OR REPLACE TEMP TABLE lab AS SELECT * FROM lab2")
            if not changed:
                break
        self._judge(passes)
        con.execute(
            "CREATE OR REPLACE TEMP TABLE members AS "
            "WITH m AS (SELECT lab.l, s.seg, s.id, s.shard, s.seconds, s.text, s.quality, "
            "  row_number() OVER (PARTITION BY lab.l ORDER BY f.seg IS NOT NULL, "
            "  s.ovrl DESC NULLS LAST, s.shard, s.id) AS rn "
            "  FROM lab JOIN segments s USING (seg) LEFT JOIN failing f USING (seg)), "
            "best AS (SELECT x AS seg, max(score) AS score FROM "
            "  (SELECT a AS x, score FROM edges UNION ALL SELECT b, score FROM edges) "
            "  GROUP BY x) "
            "SELECT m.l, m.seg, m.id, m.shard, m.seconds, m.text, m.rn, m.quality, "
            "k.id AS keep, k.shard AS keep_shard, k.quality AS keep_quality, best.score "
            "FROM m JOIN m k ON k.l = m.l AND k.rn = 1 JOIN best ON best.seg = m.seg")

    def _judge(self, passes: Callable[[str], bool] | None) -> None:
        """``failing(seg)``: the clustered segments whose known quality ``passes`` refuses.
        Read whole before written: a DuckDB connection runs one statement at a time."""
        import pyarrow as pa

        con = self.con
        failing: list[int] = []
        if passes is not None:
            cur = con.execute("SELECT seg, quality FROM lab JOIN segments USING (seg) "
                              "WHERE quality IS NOT NULL")
            while rows := cur.fetchmany(CLUSTER_CHUNK):
                failing.extend(int(seg) for seg, q in rows if not passes(q))
        table = pa.table({"seg": pa.array(failing, pa.int64())})
        con.register("failing_arrow", table)
        try:
            con.execute("CREATE OR REPLACE TEMP TABLE failing AS SELECT seg FROM failing_arrow")
        finally:
            con.unregister("failing_arrow")

    def duplicates(self, chunk: int = 100_000) -> Iterator[list[Copy]]:
        """Every copy not kept, by shard and id, ``chunk`` at a time."""
        cur = self.con.execute("SELECT id, shard, keep, keep_shard, score, seconds, rn - 1, "
                               "quality, keep_quality FROM members WHERE rn > 1 "
                               "ORDER BY shard, id")
        while rows := cur.fetchmany(chunk):
            yield [Copy(r[0], int(r[1]), r[2], int(r[3]), float(r[4]), float(r[5]), int(r[6]),
                        r[7], r[8]) for r in rows]

    def cluster_totals(self) -> tuple[int, int, float]:
        """Clusters, copies not kept, and their seconds."""
        c, d, sec = self._one(
            "SELECT count(DISTINCT l), count(*) FILTER (WHERE rn > 1), "
            "coalesce(sum(seconds) FILTER (WHERE rn > 1), 0) FROM members")
        return int(c), int(d), float(sec)

    def largest(self, n: int) -> list[tuple[str, int, int, float, str]]:
        """The ``n`` largest clusters: (id kept, its shard, copies, their seconds, text
        kept)."""
        rows = self.con.execute(
            "SELECT any_value(keep), any_value(keep_shard), count(*) AS size, "
            "sum(seconds) AS secs, any_value(text) FILTER (WHERE rn = 1) FROM members "
            "GROUP BY l ORDER BY size DESC, secs DESC, any_value(keep_shard), any_value(keep) "
            "LIMIT ?", [n]).fetchall()
        return [(r[0], int(r[1]), int(r[2]), float(r[3]), r[4] or "") for r in rows]


def _quote(s: str) -> str:
    return s.replace("'", "''")
