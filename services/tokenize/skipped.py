"""The skipped segments of a tokenize done record: services/rules/skipped.py."""

from __future__ import annotations

from services.rules.skipped import SkipLog, Skipped, read_skipped, skipped_of, tally_of

__all__ = ["SkipLog", "Skipped", "read_skipped", "skipped_of", "tally_of"]
