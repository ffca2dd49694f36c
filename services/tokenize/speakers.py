"""The ``onsei speakers`` result as tokenize reads it: once per shard, through the engine's
output store. The summary is read for each shard (small), then the shard's own labels file
when the summary covers it. A result that cannot be read as the contract says
(services/speakers/result.py) fails the shard with :class:`SpeakersResultError`, naming the
file: a line never goes out without the label the result gives it."""

from __future__ import annotations

from common.settings import Settings
from common.storage import Store
from services.records import RecordError
from services.speakers.result import SUMMARY_KEY, Label, SpeakersReader


class SpeakersResultError(RuntimeError):
    """The speakers result under the output root is unreadable or inconsistent."""


class CorpusSpeakers:
    """One per stage instance."""

    def __init__(self) -> None:
        self._reader: SpeakersReader | None = None

    def labels(self, store: Store, settings: Settings, shard_id: int) -> dict[str, Label] | None:
        """The shard's labels by segment name; None when the result does not cover it."""
        if self._reader is None or self._reader.store is not store:
            self._reader = SpeakersReader(store, settings)
        try:
            self._reader.refresh()
            return self._reader.labels(shard_id)
        except (RecordError, UnicodeDecodeError) as e:
            raise SpeakersResultError(f"speakers result {store.child_url(SUMMARY_KEY)} "
                                      f"unusable: {e}") from None
