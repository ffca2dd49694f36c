"""Which annotated segments tokenize skips, and why: the rules live in services/rules/ (one
copy, shared with enhance, ``onsei export`` and ``onsei dedup``); tokenize applies all of them.
"""

from __future__ import annotations

from services.rules.policy import DUPLICATE_OF, OFF_BY_DEFAULT, FilterPolicy, reason_kind

__all__ = ["DUPLICATE_OF", "OFF_BY_DEFAULT", "FilterPolicy", "reason_kind"]
