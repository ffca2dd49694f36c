"""What the enhance stage could not restore, one entry per member or segment, as the done
record lists it."""

from __future__ import annotations

from typing import TypedDict


class SegmentError(TypedDict):
    key: str | None  # the member's key or the segment's id; None: an asr line not understood
    reason: str
