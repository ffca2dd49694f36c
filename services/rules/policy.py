"""The filter policy in force: the rules (``quality.py``) built from the ``ONSEI_FILTER_*``
settings, and the duplicate list of ``onsei dedup``. Enhance applies its ``INPUT`` rules
before restoration, tokenize applies all of them, ``onsei export`` all of them again (the dedup
result may have grown since) and ``onsei dedup`` keeps, of each recording's copies, one they
pass.

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
from services.rules.quality import AtLeast, AtMost, Flagged, Phase, Rule, reasons
from services.rules.settings import FilterSettings

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

# Drops on by default that still remove more clean speech than the goal allows, and why they
# stay on (the languages asked for, a length rule): the export card names them beside the ones
# left off. Keys are reasons as segments and lines carry them.
MISSES_GOAL: dict[str, str] = {
    "language": "the asr stage's language ID drops 17-19 % of clean lone clips under 2 s in a "
                "language asked for (Whisper base is unsure there, and no looser rule tried "
                "kept fewer clips of other languages): join short clips into files of a few "
                "before the asr stage",
}


def _default(name: str) -> Any:
    """A setting's default: the policy built without settings is the one they default to."""
    return FilterSettings.model_fields[f"filter_{name}"].default


@dataclass(frozen=True)
class FilterPolicy:
    multi_speaker: bool = _default("multi_speaker")  # skip segments flagged multi_speaker
    min_ovrl: float = _default("min_ovrl")  # skip when DNSMOS OVRL after restoration is below
    min_ovrl_delta: float | None = _default("min_ovrl_delta")  # OVRL after - before (None: off)
    changed_text: bool = _default("restoration_changed_text")  # flagged restoration_changed_text
    duplicates: bool = _default("duplicates")  # skip the dedup result's copies, where it covers
    # the dedup result in force for one shard (:meth:`for_shard`); None: not applied
    dedup: DedupResult | None = field(default=None, compare=False)
    dedup_seen: str | None = field(default=None, compare=False)  # the result's sha, applied or not
    shard: int | None = field(default=None, compare=False)  # whose segments it judges

    min_speech_fraction: float = _default("min_speech_fraction")  # restored audio's speech share
    max_music: float = _default("max_music")  # the share of the input's pauses under music
    max_overlap: float = _default("max_overlap")  # the share of voiced time with two talkers
    # the quality rules these values make, in the order their reasons are listed
    rules: tuple[Rule, ...] = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "rules", (
            Flagged("multi_speaker", Phase.RESTORED, on=self.multi_speaker),
            AtLeast("dnsmos_after.ovrl", Phase.RESTORED, self.min_ovrl, "dnsmos_ovrl", off=0),
            AtLeast("dnsmos_delta.ovrl", Phase.RESTORED, self.min_ovrl_delta, "dnsmos_delta"),
            Flagged("restoration_changed_text", Phase.RESTORED, on=self.changed_text),
            AtLeast("speech_fraction", Phase.RESTORED, self.min_speech_fraction,
                    "speech_fraction", off=0),
            # the input's held tones, in the pauses Silero finds in the input
            # (services/enhance/quality/music.py)
            AtMost("music", Phase.INPUT, self.max_music, "music"),
            # the pitch test or the trained detector on the input audio (quality/overlap.py)
            AtMost("overlap", Phase.INPUT, self.max_overlap, "overlap"),
        ))

    @classmethod
    def from_settings(cls, s: Any) -> FilterPolicy:
        """From any settings holding the filter's section (services/rules/settings.py)."""
        return cls(multi_speaker=s.filter_multi_speaker, min_ovrl=s.filter_min_ovrl,
                   min_ovrl_delta=s.filter_min_ovrl_delta,
                   changed_text=s.filter_restoration_changed_text,
                   duplicates=s.filter_duplicates,
                   min_speech_fraction=s.filter_min_speech_fraction,
                   max_music=s.filter_max_music, max_overlap=s.filter_max_overlap)

    def at(self, phase: Phase) -> tuple[Rule, ...]:
        """The rules in force whose field exists at ``phase``."""
        return tuple(r for r in self.rules if r.active and r.phase == phase)

    def for_shard(self, result: DedupResult | None, shard_id: int) -> FilterPolicy:
        """This policy for one shard: the dedup result applies only if it covers the shard."""
        seen = result.summary.duplicates_sha256 if result is not None else None
        use = result if (self.duplicates and result is not None
                         and result.covers(shard_id)) else None
        return replace(self, dedup=use, dedup_seen=seen, shard=shard_id)

    def passes(self, quality: Quality | None) -> bool:
        """Whether a segment of this quality block (None: unknown) passes the quality rules."""
        return quality is None or not reasons(self.rules, quality)

    def reasons(self, quality: Quality | dict[str, Any] | None,
                segment: str | None = None) -> list[str]:
        """``quality``: a sidecar's block (or its JSON object; a malformed one raises
        ``services.records.RecordError``); ``segment``: its id within the shard (or its corpus
        id), for the duplicate list."""
        if isinstance(quality, dict):
            quality = Quality.from_dict(quality)
        out = reasons(self.rules, quality) if quality is not None else []
        if self.dedup is not None and segment is not None:
            cid = segment if self.shard is None else corpus_id(segment, self.shard)
            kept = self.dedup.kept_instead(cid, self.passes)
            if kept is not None:
                out.append(f"{DUPLICATE_OF}{kept}")
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
