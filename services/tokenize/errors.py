"""Why one segment of a shard could not be tokenized: a kind its done record counts and a
detail, raised where it is found and written as ``kind`` or ``kind:detail`` in the record's
``errors_sample`` (the shard goes on). Typed, so a failure is filed by where it happened, not
by matching an exception's text: a ``ValueError`` from the codec's feature extractor is a
``prepare`` error, not a bad sidecar."""

from __future__ import annotations

from enum import StrEnum


class Problem(StrEnum):
    MISSING_JSON = "missing_json"  # the member has no sidecar
    BAD_JSON = "bad_json"  # the sidecar is not one (its detail says why)
    MISSING_AUDIO = "missing_audio"  # a sidecar without its FLAC
    AUDIO = "audio"  # the FLAC does not decode (common.shards.audio's reason)
    TOO_SHORT = "too_short"  # under one codec frame at 16 kHz
    PREPARE = "prepare"  # the codec's feature extractor refused the audio
    OUT_OF_MEMORY = "out_of_memory"  # a lone segment the device could not encode
    MEMBER = "member"  # the tar member itself (common.shards.members' reason)


class SegmentError(Exception):
    def __init__(self, problem: Problem, detail: str = "") -> None:
        super().__init__(f"{problem}:{detail}" if detail else str(problem))
        self.problem = problem
        self.detail = detail

    @property
    def reason(self) -> str:
        """What the done record says: the kind, and the detail (at most 100 characters)."""
        return f"{self.problem}:{self.detail[:100]}" if self.detail else str(self.problem)
