"""Takedown requests in the ledger: ``_ledger/takedown/<when>-<id>.json``, one object per
request, written once and never rewritten or deleted by onsei (append-only: a request is
withdrawn only by a person removing its file, which the store's own history shows).

A request names what to take down in one way: a source (URL or id, as the provenance table
has it), an input key (``key`` in every shard, or ``key@shard``), or a voice (the corpus
speakers an audio sample matched in the speaker index, at the threshold stated, resolved when
the request is made and written into it). It says who asked, when and why, and what it
matched then; every later export applies it again to the corpus as it is then (new shards of
the same source included) and says how many segments it removed.
"""

from __future__ import annotations

import time
import uuid
from typing import Literal

from pydantic import Field

from common.record import Record, RecordError, omitted
from common.storage import Store

PREFIX = "_ledger/takedown/"
Kind = Literal["source", "key", "voice"]


class Matched(Record):
    """What the request matched when it was made."""

    keys: int = 0  # input keys (shard, key)
    speakers: list[str] = Field(default_factory=list)  # a voice request: those matched
    cosines: list[float] = Field(default_factory=list)  # each speaker's cosine to the sample
    near_duplicates: int = 0  # segments added through the dedup clusters


class Takedown(Record):
    id: str
    kind: Kind
    value: str  # the source, the key, or (voice) the sample's file name
    requested_by: str
    reason: str
    requested_at: float
    threshold: float | None = omitted()  # voice: the cosine the sample's match needed
    speakers: list[str] = Field(default_factory=list)  # voice: the corpus speakers it covers
    # voice: the sample's embedding (256 values), matched again at each export against the
    # corpus speakers as they are then (a voice linked later as a new speaker is covered too)
    embedding: list[float] | None = omitted()
    matched: Matched = Field(default_factory=Matched)

    @property
    def key(self) -> str:
        when = time.strftime("%Y%m%dT%H%M%S", time.gmtime(self.requested_at))
        return f"{PREFIX}{when}-{self.id}.json"


def new_id() -> str:
    return uuid.uuid4().hex[:12]


def record(store: Store, request: Takedown) -> str:
    """Write ``request`` once; returns its key. An id already there is refused (never
    overwritten)."""
    key = request.key
    if store.exists(key):
        raise FileExistsError(f"{key} already exists: a takedown is never rewritten")
    store.write_bytes(key, (request.to_json() + "\n").encode())
    return key


def load_all(store: Store) -> tuple[list[Takedown], dict[str, str]]:
    """Every request in the order made, and the files that do not read (key -> why): an
    unreadable request is named, never skipped silently (the export refuses to run past it)."""
    out: list[Takedown] = []
    bad: dict[str, str] = {}
    for key in sorted(store.list(PREFIX)):
        if not key.endswith(".json"):
            continue
        try:
            out.append(Takedown.from_json(store.read_bytes(key)))
        except (RecordError, OSError) as e:
            bad[key] = str(e)[:200]
    out.sort(key=lambda t: (t.requested_at, t.id))
    return out, bad
