"""The result of ``onsei speakers`` as its consumers read it (tokenize, ``onsei export``).

- ``speakers/<stem>.jsonl``: one :class:`SpeakerLine` per labelled segment of the shard
  (``id``: its name within the shard), written once, when the shard is linked: a label given
  is never changed by a later run;
- ``speakers/summary.json``: the :class:`SpeakersSummary`, written last, with the shards the
  result covers.

A consumer reads a shard's lines only when the summary covers the shard. Speaker ids are
corpus-wide (``spk`` and the speaker's number): the same voice in two files, two shards, two
runs has one id.
"""

from __future__ import annotations

from pydantic import Field

from common.settings import Settings
from common.storage import NotFound, Store
from services.records import Record, RecordError

SPEAKERS_DIR = "speakers"
SUMMARY_KEY = f"{SPEAKERS_DIR}/summary.json"


def labels_key(settings: Settings, shard_id: int) -> str:
    return f"{SPEAKERS_DIR}/{settings.shard_stem(shard_id)}.jsonl"


def speaker_name(number: int) -> str:
    return f"spk{number:08d}"


class SpeakerLine(Record):
    """A segment's corpus speaker and the cosine of its embedding to that speaker's centroid
    when it was linked (0-1)."""

    id: str
    corpus_speaker_id: str
    corpus_speaker_confidence: float


class SpeakersSummary(Record):
    """``shards``: the shards linked so far (the result covers exactly these);
    ``bad_files``: shards left out, each with why (a missing or corrupt speakers file)."""

    shards: list[int] = Field(default_factory=list)
    speakers: int = 0
    file_speakers: int = 0
    segments: int = 0
    bad_files: dict[str, str] = Field(default_factory=dict)
    finished_at: float = 0.0


Label = tuple[str, float]  # corpus_speaker_id, corpus_speaker_confidence


def parse_labels(data: bytes, name: str) -> dict[str, Label]:
    out = {}
    for n, raw in enumerate(data.splitlines(), 1):
        if raw.strip():
            try:
                line = SpeakerLine.from_json(raw)
            except RecordError as e:
                raise RecordError(f"{name} line {n}: {e}") from None
            out[line.id] = (line.corpus_speaker_id, line.corpus_speaker_confidence)
    return out


class SpeakersReader:
    """One per consumer: the summary read last and each shard's labels on demand. A result
    that cannot be read raises :class:`RecordError`, naming the file."""

    def __init__(self, store: Store, settings: Settings) -> None:
        self.store = store
        self.settings = settings
        self._raw: bytes | None = None
        self._covered: frozenset[int] = frozenset()

    def refresh(self) -> SpeakersSummary | None:
        """The current summary (None when ``onsei speakers`` never ran on this root)."""
        try:
            raw = self.store.read_bytes(SUMMARY_KEY)
        except NotFound:
            self._raw, self._covered = None, frozenset()
            return None
        s = SpeakersSummary.from_json(raw)
        self._raw, self._covered = raw, frozenset(s.shards)
        return s

    def labels(self, shard_id: int) -> dict[str, Label] | None:
        """The shard's labels by segment name, None when the summary does not cover it."""
        if shard_id not in self._covered:
            return None
        key = labels_key(self.settings, shard_id)
        try:
            data = self.store.read_bytes(key)
        except NotFound:
            raise RecordError(f"{key} missing, though {SUMMARY_KEY} covers shard "
                              f"{shard_id}") from None
        return parse_labels(data, key)
