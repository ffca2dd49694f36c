"""How much text a normaliser is given: a segment's text is bounded in length, each English
word in length, and a segment's normalising in time. Past a bound the segment keeps its
``text`` without spoken forms and is counted (``TextNormaliser.bounded``; the asr done record's
``text_bounded``), so one runaway text costs neither the shard nor the worker's memory.

WeTextProcessing's cost grows faster than the text (measured on this machine: 200 digits
1.0 s / 190 MiB, 500 digits 4.2 s / 400 MiB, 2,000 characters of dates and money 5.0 s /
370 MiB; 4,000 digits 32 s / 2.5 GiB): English is given in pieces of at most
:data:`PIECE` characters (sentences, packed), and a word longer than :data:`MAX_WORD`
characters (no spoken number is that long) stops it before it starts."""

from __future__ import annotations

import time

MAX_CHARS = 2000  # a segment's text (Whisper's 30 s windows give a few hundred at most)
MAX_WORD = 64  # characters of one whitespace-free English token
PIECE = 300  # characters of English given to the normaliser at once
SECONDS = 5.0  # one segment's normalising, checked between pieces


class TextTooCostly(ValueError):
    """The text is past a bound: its segment keeps its text without spoken forms."""


def deadline(seconds: float = SECONDS) -> float:
    return time.monotonic() + seconds


def check(deadline_at: float | None) -> None:
    if deadline_at is not None and time.monotonic() > deadline_at:
        raise TextTooCostly(f"normalising took longer than {SECONDS:g} s")
