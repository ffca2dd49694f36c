"""An ``onsei speakers`` result written as the step writes it (services/speakers/result.py), for
the tests of its consumers (tokenize, export)."""

from __future__ import annotations

import time

from common.settings import Settings
from common.storage import Store
from services.speakers.result import SUMMARY_KEY, SpeakerLine, SpeakersSummary, labels_key


def write_labels(store: Store, settings: Settings,
                 labels: dict[int, dict[str, tuple[str, float]]]) -> SpeakersSummary:
    """``labels``: shard -> segment name -> (corpus speaker id, confidence); the summary covers
    exactly these shards."""
    for shard, segs in labels.items():
        body = "".join(SpeakerLine(id=k, corpus_speaker_id=v[0],
                                   corpus_speaker_confidence=v[1]).to_json() + "\n"
                       for k, v in segs.items())
        store.write_bytes(labels_key(settings, shard), body.encode())
    summary = SpeakersSummary(shards=sorted(labels), speakers=len({v[0] for segs in
                                                                   labels.values()
                                                                   for v in segs.values()}),
                              segments=sum(map(len, labels.values())), finished_at=time.time())
    store.write_bytes(SUMMARY_KEY, summary.to_json().encode())
    return summary
