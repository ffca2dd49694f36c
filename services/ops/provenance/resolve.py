"""What the takedown requests cover, in DuckDB: one query over the corpus tables, the same at
export, at ``onsei takedown`` and in the bench (``python -m bench --only provenance``).

The tables (any DuckDB relation: Arrow tables at export, Parquet files at corpus scale):

- ``prov(shard, key, source)``: the input keys and their source (the asr provenance tables);
- ``seg(id, shard, key, speaker, cluster)``: the segments the corpus indexes know of, with
  their corpus speaker (``onsei speakers``) and their dedup cluster (the copy kept's id).

A request covers an input key by its source or its key; a voice request covers its corpus
speakers. A segment is covered when its key or its speaker is, and so is every segment of the
dedup cluster of a covered one (a copy of a recording taken down is taken down: a re-upload, a
quote in another episode). Segments outside any cluster and without a speaker label are
covered through their key alone, which the export checks line by line.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from services.ops.provenance.requests import Takedown


def norm_source(text: str) -> str:
    """A source as compared: trimmed, without a trailing slash (``https://x/v/1/`` is
    ``https://x/v/1``); case is kept (ids and URL paths are case-sensitive)."""
    return text.strip().rstrip("/")


def split_key(value: str) -> tuple[str, int | None]:
    """``key@000012`` -> (key, 12); ``key`` -> (key, None): every shard."""
    head, mark, tail = value.rpartition("@")
    if mark and tail.isdigit():
        return head, int(tail)
    return value, None


@dataclass
class Resolution:
    """Request id -> what it covers."""

    keys: dict[tuple[int, str], set[str]] = field(default_factory=lambda: defaultdict(set))
    any_shard_keys: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    speakers: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    ids: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))  # by cluster
    sources: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))

    @property
    def empty(self) -> bool:
        return not (self.keys or self.any_shard_keys or self.speakers or self.ids
                    or self.sources)

    def covering(self, cid: str, shard: int, key: str, speaker: str | None,
                 source: str | None = None) -> list[str]:
        """The requests that cover one segment (its corpus id, shard, input key, speaker,
        and, for a published line, its source)."""
        if self.empty:
            return []
        out = (self.keys.get((shard, key), set()) | self.any_shard_keys.get(key, set())
               | self.ids.get(cid, set()))
        if speaker:
            out |= self.speakers.get(speaker, set())
        if source:
            out |= self.sources.get(norm_source(source), set())
        return sorted(out)

    def keys_of(self, request: str) -> int:
        return sum(1 for reqs in self.keys.values() if request in reqs)

    def near_duplicates(self, request: str) -> int:
        return sum(1 for reqs in self.ids.values() if request in reqs)


def _requests_tables(requests: list[Takedown]) -> dict[str, Any]:
    import pyarrow as pa

    src = [(t.id, norm_source(t.value)) for t in requests if t.kind == "source"]
    keys = [(t.id, *split_key(t.value)) for t in requests if t.kind == "key"]
    spk = [(t.id, s) for t in requests if t.kind == "voice" for s in t.speakers]
    return {
        "req_src": pa.table({"req": [r for r, _ in src], "source": [s for _, s in src]},
                            schema=pa.schema([("req", pa.string()), ("source", pa.string())])),
        "req_key": pa.table({"req": [r for r, _, _ in keys], "key": [k for _, k, _ in keys],
                             "shard": [s for _, _, s in keys]},
                            schema=pa.schema([("req", pa.string()), ("key", pa.string()),
                                              ("shard", pa.int64())])),
        "req_spk": pa.table({"req": [r for r, _ in spk], "speaker": [s for _, s in spk]},
                            schema=pa.schema([("req", pa.string()), ("speaker", pa.string())])),
    }


_HIT_KEYS = """
CREATE OR REPLACE TEMP TABLE hit_keys AS
SELECT r.req, p.shard, p.key FROM td_prov p JOIN req_src r ON rtrim(trim(p.source), '/') = r.source
UNION SELECT req, shard, key FROM req_key WHERE shard IS NOT NULL
"""
_HIT_IDS = """
WITH hit_clusters AS (
  SELECT h.req, s.cluster FROM td_seg s JOIN hit_keys h ON s.shard = h.shard AND s.key = h.key
  WHERE s.cluster IS NOT NULL
  UNION SELECT r.req, s.cluster FROM td_seg s JOIN req_key r ON r.shard IS NULL AND s.key = r.key
  WHERE s.cluster IS NOT NULL
  UNION SELECT r.req, s.cluster FROM td_seg s JOIN req_spk r ON s.speaker = r.speaker
  WHERE s.cluster IS NOT NULL)
SELECT DISTINCT h.req, s.id FROM td_seg s JOIN hit_clusters h ON s.cluster = h.cluster
"""


def resolve(con: Any, requests: list[Takedown], prov: str = "prov", seg: str = "seg") -> Resolution:
    """What ``requests`` cover, given ``prov`` and ``seg`` as relations ``con`` knows (table
    or view names; a Parquet scan: ``read_parquet('...')``)."""
    res = Resolution()
    if not requests:
        return res
    for name, table in _requests_tables(requests).items():
        con.register(name, table)
    con.execute(f"CREATE OR REPLACE TEMP VIEW td_prov AS SELECT shard, key, source FROM {prov}")
    con.execute(f"CREATE OR REPLACE TEMP VIEW td_seg AS SELECT id, shard, key, speaker, cluster "
                f"FROM {seg}")
    con.execute(_HIT_KEYS)
    for req, shard, key in con.execute("SELECT req, shard, key FROM hit_keys").fetchall():
        res.keys[(int(shard), key)].add(req)
    for req, cid in con.execute(_HIT_IDS).fetchall():
        res.ids[cid].add(req)
    for t in requests:
        if t.kind == "key":
            key, shard = split_key(t.value)
            if shard is None:
                res.any_shard_keys[key].add(t.id)
        elif t.kind == "voice":
            for s in t.speakers:
                res.speakers[s].add(t.id)
        else:
            res.sources[norm_source(t.value)].add(t.id)
    return res
