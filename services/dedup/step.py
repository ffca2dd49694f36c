"""``onsei dedup`` as the pipeline declares it (services/pipeline.py, ``CORPUS``): it reads the
signatures enhance publishes beside each enhanced shard, writes ``dedup/`` (the summary last),
and tokenize applies it (docs/dedup.md)."""

from __future__ import annotations

from common.stages.spec import CorpusStep
from common.storage import NotFound, Store
from services.dedup.result import SUMMARY_KEY, DedupSummary

STEP = CorpusStep(name="dedup", after="enhance", reads="signatures", result=SUMMARY_KEY,
                  applied_by="tokenize", covered="services.dedup.step:covered")


def covered(store: Store) -> list[int] | None:
    """The shards the result covers (its summary's; the list's match is its readers' check),
    None before the first ``onsei dedup``; a summary that does not read raises RecordError."""
    try:
        return DedupSummary.from_json(store.read_bytes(SUMMARY_KEY)).shards
    except NotFound:
        return None
