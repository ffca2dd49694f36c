"""Which annotated segments tokenize skips, and why (docs/quality.md). The annotations come
from the enhance sidecars; the rule lives here, with the stage that applies it (stages never
import each other).

One reason string per rule a segment fails; an empty list keeps it. A segment without
annotations (made before they existed, or with ``ONSEI_QUALITY_ANNOTATIONS=false``) is kept, and
a rule whose field was not computed (too short to judge speakers, not in the fidelity sample)
does not apply.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from services.records import Quality


@dataclass(frozen=True)
class FilterPolicy:
    multi_speaker: bool = True  # skip segments flagged multi_speaker
    min_ovrl: float = 2.0  # skip when DNSMOS OVRL after restoration is below (0: off)
    min_ovrl_delta: float | None = None  # skip when OVRL after - before is below (None: off)
    changed_text: bool = False  # skip segments flagged restoration_changed_text
    min_speech_fraction: float = 0.1  # skip when less of the restored audio is speech (0: off)

    @classmethod
    def from_settings(cls, s: Any) -> FilterPolicy:
        return cls(multi_speaker=s.filter_multi_speaker, min_ovrl=s.filter_min_ovrl,
                   min_ovrl_delta=s.filter_min_ovrl_delta,
                   changed_text=s.filter_restoration_changed_text,
                   min_speech_fraction=s.filter_min_speech_fraction)

    def reasons(self, quality: Quality | dict[str, Any] | None) -> list[str]:
        """``quality``: a sidecar's block (or its JSON object; a malformed one raises
        ``services.records.RecordError``)."""
        if isinstance(quality, dict):
            quality = Quality.from_dict(quality)
        if quality is None:
            return []
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
        if self.min_speech_fraction > 0 and speech is not None and speech < self.min_speech_fraction:
            out.append(f"speech_fraction<{self.min_speech_fraction:g}")
        return out

    def describe(self) -> dict[str, Any]:
        return {"multi_speaker": self.multi_speaker, "min_ovrl": self.min_ovrl,
                "min_ovrl_delta": self.min_ovrl_delta, "restoration_changed_text": self.changed_text,
                "min_speech_fraction": self.min_speech_fraction}
