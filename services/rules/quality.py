"""The quality rules, in datatrove's filter shape: a rule is called on a segment's ``quality``
block and returns None (keep) or its reason, the string the done records count under.

Each rule declares the field it reads (a dotted path into :class:`services.records.Quality`)
and where that field first exists (:class:`Phase`): on the input audio, before restoration, or
on the restored audio. The enhance stage applies the ``INPUT`` rules before Sidon runs, so a
segment they drop costs no restoration, annotation or tokens; tokenize and ``onsei export``
apply every rule (again: a segment kept early passes them then too). A rule whose field was not
computed (too short to score, not sampled, annotated before the field existed) does not apply.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from services.records import Quality


class Phase(StrEnum):
    """Where a field first exists in the flow of a shard."""

    INPUT = "input"  # computed on the segment's input audio: known before restoration
    RESTORED = "restored"  # needs the restored audio (or a model run on it)


def field_of(quality: Quality, path: str) -> Any:
    """The value at ``path`` (``"dnsmos_after.ovrl"``), None where any step is absent."""
    value: Any = quality
    for part in path.split("."):
        value = getattr(value, part, None) if value is not None else None
    return value


@dataclass(frozen=True)
class Rule(ABC):
    """One rule: ``reads`` the field, ``phase`` where it first exists, ``active`` whether its
    setting turns it on at all."""

    reads: str
    phase: Phase

    @property
    @abstractmethod
    def active(self) -> bool:
        """Whether its setting turns the rule on."""

    @abstractmethod
    def reason(self) -> str:
        """The reason a segment it drops carries (``music>0.5``)."""

    @abstractmethod
    def fails(self, value: Any) -> bool:
        """Whether the field's ``value`` (never None) drops the segment."""

    def __call__(self, quality: Quality) -> str | None:
        if not self.active:
            return None
        value = field_of(quality, self.reads)
        return self.reason() if value is not None and self.fails(value) else None


@dataclass(frozen=True)
class Flagged(Rule):
    """Drops a segment whose boolean field is set: the reason is the field's name."""

    on: bool = True

    @property
    def active(self) -> bool:
        return self.on

    def reason(self) -> str:
        return self.reads

    def fails(self, value: Any) -> bool:
        return bool(value)


@dataclass(frozen=True)
class AtLeast(Rule):
    """Drops a segment whose score is below ``limit``: ``<label><<limit>``. ``off``: the limit
    that turns the rule off (0 for a share; None: only an unset limit does)."""

    limit: float | None = None
    label: str = ""
    off: float | None = None

    @property
    def active(self) -> bool:
        return self.limit is not None and (self.off is None or self.limit > self.off)

    def reason(self) -> str:
        return f"{self.label}<{self.limit:g}"

    def fails(self, value: Any) -> bool:
        assert self.limit is not None  # active
        return bool(value < self.limit)


@dataclass(frozen=True)
class AtMost(Rule):
    """Drops a segment whose share is above ``limit``: ``<label>><limit>``; 1 turns it off."""

    limit: float = 1.0
    label: str = ""

    @property
    def active(self) -> bool:
        return self.limit < 1

    def reason(self) -> str:
        return f"{self.label}>{self.limit:g}"

    def fails(self, value: Any) -> bool:
        return bool(value > self.limit)


def reasons(rules: tuple[Rule, ...], quality: Quality) -> list[str]:
    """Every reason of ``rules`` (in their order) that ``quality`` fails; empty: kept."""
    return [r for r in (rule(quality) for rule in rules) if r is not None]
