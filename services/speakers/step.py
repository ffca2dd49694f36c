"""``onsei speakers`` as the pipeline declares it (services/pipeline.py, ``CORPUS``): it reads
the speaker embeddings enhance publishes beside each enhanced shard, writes ``speakers/`` (the
summary last), and tokenize carries its labels (docs/speakers.md)."""

from __future__ import annotations

from common.stages.spec import CorpusStep
from common.storage import NotFound, Store
from services.speakers.result import SUMMARY_KEY, SpeakersSummary

STEP = CorpusStep(name="speakers", after="enhance", reads="speakers", result=SUMMARY_KEY,
                  applied_by="tokenize", covered="services.speakers.step:covered")


def covered(store: Store) -> list[int] | None:
    """The shards the result covers, None before the first ``onsei speakers``; a summary that
    does not read raises RecordError."""
    try:
        return SpeakersSummary.from_json(store.read_bytes(SUMMARY_KEY)).shards
    except NotFound:
        return None
