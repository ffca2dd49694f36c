"""Which annotated segments tokenize skips, and why (docs/quality.md). The annotations come
from the enhance sidecars; the rule lives here, with the stage that applies it (stages never
import each other).

One reason string per rule a segment fails; an empty list keeps it. A segment without
annotations (made before they existed, or with ``ONSEI_QUALITY_ANNOTATIONS=false``) is kept, and
a rule whose field was not computed (too short to judge speakers, not in the fidelity sample)
does not apply.

A segment that ``onsei dedup`` judged a copy of another is skipped as ``duplicate_of:<id>``
(the corpus id of the copy kept), unless that copy and every copy ranked before this one fail
this policy (the result was made under another: this one is then the recording's copy kept, so
each recording with a passing copy keeps exactly one), but only when the dedup result covers
the segment's shard: a shard enhanced after the last ``onsei dedup`` has not been matched
against the corpus yet, and its copies are left for the next run (tokenize again, or
``onsei export``, which applies the list).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from services.records import Quality, corpus_id

if TYPE_CHECKING:
    from services.dedup.result import DedupResult

DUPLICATE_OF = "duplicate_of:"  # the reason's prefix; the kept copy's id follows

# Filters the defaults leave off because on clean single-voice speech they removed more than
# the goal allows (1 % of recorded segments, 5 % of synthetic ones; bench/filters.py): each
# one's rule stays, a setting away, and the export card names them.
OFF_BY_DEFAULT: dict[str, str] = {
    "multi_speaker": "Resemblyzer's consistency flagged 6.5 % of clean one-voice recorded "
                     "segments (8 of 123) and more of acted voices; enhance cuts segments at "
                     "speaker changes instead (ONSEI_FILTER_MULTI_SPEAKER=true to skip them)",
}


@dataclass(frozen=True)
class FilterPolicy:
    multi_speaker: bool = False  # skip segments flagged multi_speaker (OFF_BY_DEFAULT)
    min_ovrl: float = 2.0  # skip when DNSMOS OVRL after restoration is below (0: off)
    min_ovrl_delta: float | None = None  # skip when OVRL after - before is below (None: off)
    changed_text: bool = False  # skip segments flagged restoration_changed_text
    duplicates: bool = True  # skip segments the dedup result lists, where it covers the shard
    # the dedup result in force for one shard (:meth:`for_shard`); None: not applied
    dedup: DedupResult | None = field(default=None, compare=False)
    dedup_seen: str | None = field(default=None, compare=False)  # the result's sha, applied or not
    shard: int | None = field(default=None, compare=False)  # whose segments it judges

    min_speech_fraction: float = 0.1  # skip when less of the restored audio is speech (0: off)
    max_music: float = 0.5  # skip when more of the input's pauses hold music (1: off)
    max_overlap: float = 1.0  # skip when more of the voiced time has two talkers (1: off)

    @classmethod
    def from_settings(cls, s: Any) -> FilterPolicy:
        return cls(multi_speaker=s.filter_multi_speaker, min_ovrl=s.filter_min_ovrl,
                   min_ovrl_delta=s.filter_min_ovrl_delta,
                   changed_text=s.filter_restoration_changed_text,
                   duplicates=s.filter_duplicates,
                   min_speech_fraction=s.filter_min_speech_fraction,
                   max_music=s.filter_max_music, max_overlap=s.filter_max_overlap)

    def for_shard(self, result: DedupResult | None, shard_id: int) -> FilterPolicy:
        """This policy for one shard: the dedup result applies only if it covers the shard."""
        seen = result.summary.duplicates_sha256 if result is not None else None
        use = result if (self.duplicates and result is not None
                         and result.covers(shard_id)) else None
        return replace(self, dedup=use, dedup_seen=seen, shard=shard_id)

    def passes(self, quality: Quality | None) -> bool:
        """Whether a segment of this quality block (None: unknown) passes the quality rules."""
        return quality is None or not self._quality_reasons(quality)

    def reasons(self, quality: Quality | dict[str, Any] | None,
                segment: str | None = None) -> list[str]:
        """``quality``: a sidecar's block (or its JSON object; a malformed one raises
        ``services.records.RecordError``); ``segment``: its id within the shard (or its corpus
        id), for the duplicate list."""
        if isinstance(quality, dict):
            quality = Quality.from_dict(quality)
        out = self._quality_reasons(quality) if quality is not None else []
        if self.dedup is not None and segment is not None:
            cid = segment if self.shard is None else corpus_id(segment, self.shard)
            kept = self.dedup.kept_instead(cid, self.passes)
            if kept is not None:
                out.append(f"{DUPLICATE_OF}{kept}")
        return out

    def _quality_reasons(self, quality: Quality) -> list[str]:
        out = []
        if self.multi_speaker and quality.multi_speaker:
            out.append("multi_speaker")
        after = quality.dnsmos_after.ovrl if quality.dnsmos_after else None
        if self.min_ovrl > 0 and after is not None and after < self.min_ovrl:
            out.append(f"dnsmos_ovrl<{self.min_ovrl:g}")
        delta = quality.dnsmos_delta.ovrl if quality.dnsmos_delta else None
        if self.min_ovrl_delta is not None and delta is not None and delta < self.min_ovrl_delta:
            out.append(f"dnsmos_delta<{self.min_ovrl_delta:g}")
        if self.changed_text and quality.restoration_changed_text:
            out.append("restoration_changed_text")
        speech = quality.speech_fraction
        low = self.min_speech_fraction
        if low > 0 and speech is not None and speech < low:
            out.append(f"speech_fraction<{self.min_speech_fraction:g}")
        if self.max_music < 1 and quality.music is not None and quality.music > self.max_music:
            out.append(f"music>{self.max_music:g}")
        if (self.max_overlap < 1 and quality.overlap is not None
                and quality.overlap > self.max_overlap):
            out.append(f"overlap>{self.max_overlap:g}")
        return out

    def describe(self) -> dict[str, Any]:
        """The policy in force (a done record's ``quality_filter``). ``dedup``: None when no
        dedup result existed, else its ``duplicates_sha256`` and whether it ``applied`` (it
        covered the shard and ``duplicates`` is on)."""
        return {"multi_speaker": self.multi_speaker, "min_ovrl": self.min_ovrl,
                "min_ovrl_delta": self.min_ovrl_delta,
                "restoration_changed_text": self.changed_text, "duplicates": self.duplicates,
                "min_speech_fraction": self.min_speech_fraction, "max_music": self.max_music,
                "max_overlap": self.max_overlap,
                "dedup": None if self.dedup_seen is None else {
                    "duplicates_sha256": self.dedup_seen, "applied": self.dedup is not None}}


def reason_kind(reason: str) -> str:
    """A reason without its argument (``duplicate_of:<id>`` -> ``duplicate_of``): what counts
    per reason add up under (one key per rule, not per kept copy)."""
    return DUPLICATE_OF[:-1] if reason.startswith(DUPLICATE_OF) else reason
