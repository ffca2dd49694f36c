"""The corpus as the takedowns see it: each shard's provenance table (asr's side output),
the dedup clusters (``dedup/duplicates.jsonl``) and the corpus speakers (``onsei speakers``'
labels), as the tables services/ops/provenance/resolve.py queries."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from common.settings import Settings
from common.storage import NotFound, Store
from services.dedup.result import DedupResult
from services.provenance.record import Provenance
from services.provenance.table import parse_table
from services.records import local_name, shard_of
from services.speakers.result import Label

NOTHING = Provenance()  # a key without metadata (records are frozen: one instance serves all)


def provenance_key(settings: Settings, shard_id: int) -> str:
    from services.pipeline import PIPELINE  # loads asr's spec only

    return PIPELINE.side_output_key("asr", "provenance", settings, shard_id)


def read_provenance(store: Store, settings: Settings,
                    shard_id: int) -> dict[str, Provenance] | None:
    """Key -> provenance of one shard; None when asr wrote no table (a shard transcribed
    before provenance existed: every key unknown)."""
    try:
        return parse_table(store.read_bytes(provenance_key(settings, shard_id)))
    except NotFound:
        return None


def source_key(segment: str) -> str:
    """The input key of a segment name (``<key>_<idx>`` or ``<key>_<idx>-<part>``)."""
    return local_name(segment).rsplit("_", 1)[0]


@dataclass
class Corpus:
    provenance: dict[int, dict[str, Provenance] | None] = field(default_factory=dict)
    dedup: DedupResult | None = None
    labels: Mapping[int, Mapping[str, Label] | None] = field(default_factory=dict)

    @classmethod
    def load(cls, store: Store, settings: Settings, shards: Iterable[int],
             dedup: DedupResult | None, labels: Mapping[int, Mapping[str, Label] | None],
             workers: int = 8) -> Corpus:
        ids = sorted(shards)
        with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
            tables = list(pool.map(lambda i: read_provenance(store, settings, i), ids))
        return cls(dict(zip(ids, tables, strict=True)), dedup, labels)

    def of(self, shard: int, key: str) -> Provenance:
        table = self.provenance.get(shard)
        got = table.get(key) if table else None
        return NOTHING if got is None else got

    def _speaker(self, cid: str) -> str | None:
        shard = shard_of(cid)
        got = (self.labels.get(shard) or {}).get(local_name(cid)) if shard is not None else None
        return got[0] if got else None

    def tables(self) -> tuple[Any, Any]:
        """(prov, seg) as Arrow tables."""
        import pyarrow as pa

        shards, keys, sources = [], [], []
        for shard, table in self.provenance.items():
            for key, p in (table or {}).items():
                shards.append(shard)
                keys.append(key)
                sources.append(p.source)
        prov = pa.table({"shard": pa.array(shards, pa.int64()), "key": pa.array(keys, pa.string()),
                         "source": pa.array(sources, pa.string())})
        rows: dict[str, list[Any]] = {"id": [], "shard": [], "key": [], "speaker": [],
                                      "cluster": []}
        members: dict[str, str] = {}
        for d in (self.dedup.duplicates.values() if self.dedup is not None else ()):
            if shard_of(d.id) is None or shard_of(d.duplicate_of) is None:
                continue  # a list written before corpus ids: no shard to match on
            members[d.id] = d.duplicate_of
            members.setdefault(d.duplicate_of, d.duplicate_of)
        for cid, cluster in members.items():
            rows["id"].append(cid)
            rows["shard"].append(shard_of(cid))
            rows["key"].append(source_key(cid))
            rows["speaker"].append(self._speaker(cid))
            rows["cluster"].append(cluster)
        seg = pa.table({"id": pa.array(rows["id"], pa.string()),
                        "shard": pa.array(rows["shard"], pa.int64()),
                        "key": pa.array(rows["key"], pa.string()),
                        "speaker": pa.array(rows["speaker"], pa.string()),
                        "cluster": pa.array(rows["cluster"], pa.string())})
        return prov, seg
