"""``onsei takedown``'s work: record a request (with what it matches now), and list the lines
of a published export that the requests on record cover."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from common.ledger.store import Ledger
from common.settings import Settings
from common.storage import Store
from services.dedup.result import DedupResult
from services.ops.provenance.corpus import Corpus, source_key
from services.ops.provenance.requests import Kind, Matched, Takedown, load_all, new_id, record
from services.ops.provenance.resolve import Resolution, resolve
from services.records import local_name, shard_of
from services.speakers.result import SpeakersReader

SPLITS = ("train", "validation", "test")


def corpus_now(settings: Settings, store: Store, ledger: Ledger) -> Corpus:
    """Every transcribed shard's provenance, the dedup clusters and the corpus speakers."""
    shards = sorted(ledger.done_ids("asr"))
    speakers = SpeakersReader(store, settings)
    speakers.refresh()
    labels = {i: speakers.labels(i) for i in shards}
    return Corpus.load(store, settings, shards, DedupResult.load(store), labels)


def resolved(corpus: Corpus, requests: list[Takedown]) -> Resolution:
    import duckdb

    prov, seg = corpus.tables()
    con = duckdb.connect()
    try:
        con.register("prov_in", prov)
        con.register("seg_in", seg)
        return resolve(con, requests, "prov_in", "seg_in")
    finally:
        con.close()


def make_request(store: Store, corpus: Corpus, kind: Kind, value: str, by: str, reason: str,
                 speakers: list[tuple[str, float]] | None = None,
                 threshold: float | None = None,
                 embedding: Any = None) -> tuple[Takedown, str]:
    """The request written to the ledger, with what it matches now; returns it and its key."""
    t = Takedown(id=new_id(), kind=kind, value=value, requested_by=by, reason=reason,
                 requested_at=time.time(), threshold=threshold,
                 speakers=[s for s, _ in speakers or []],
                 embedding=None if embedding is None else
                 [round(float(v), 5) for v in embedding])
    res = resolved(corpus, [t])
    keys = res.keys_of(t.id) if kind != "key" else _keys_named(corpus, value)
    t = t.model_copy(update={"matched": Matched(
        keys=keys, speakers=t.speakers, cosines=[c for _, c in speakers or []],
        near_duplicates=res.near_duplicates(t.id))})
    return t, record(store, t)


def _keys_named(corpus: Corpus, value: str) -> int:
    from services.ops.provenance.resolve import split_key

    key, shard = split_key(value)
    return sum(1 for s, table in corpus.provenance.items()
               if (shard is None or s == shard) and key in (table or {}))


@dataclass
class Covered:
    where: str  # split/part-NNNNN.jsonl:line
    id: str
    requests: list[str]


def check_export(export: Store, res: Resolution) -> Iterator[Covered]:
    """The lines of the export in ``export`` (a local folder or an s3:// prefix, as a store)
    that a request covers, in file order."""
    for split in SPLITS:
        for part in sorted(k for k in export.list(f"{split}/") if k.endswith(".jsonl")):
            for n, raw in enumerate(export.read_bytes(part).splitlines(), 1):
                try:
                    line = json.loads(raw)
                except ValueError:
                    continue
                cid = str(line.get("id", "")) if isinstance(line, dict) else ""
                shard = shard_of(cid)
                if shard is None:
                    continue
                reqs = res.covering(cid, shard, source_key(local_name(cid)),
                                    line.get("corpus_speaker_id"), line.get("origin"))
                if reqs:
                    yield Covered(f"{part}:{n}", cid, reqs)


def requests_on_record(store: Store) -> list[Takedown]:
    requests, bad = load_all(store)
    if bad:
        key, why = next(iter(bad.items()))
        raise ValueError(f"takedown request {key} unreadable ({why})")
    return requests
