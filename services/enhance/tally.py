"""Shard totals of the annotations, the re-cut and the labels, for the done record (the steps
of ``chain.py`` count into one)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from services.enhance.quality.records import QualityRecord


class QualityTally:
    def __init__(self) -> None:
        self.annotated = 0
        self.multi_speaker = 0
        self.fidelity_checked = 0
        self.changed_text = 0
        self.ovrl_before = 0.0
        self.ovrl_after = 0.0
        self.speaker_files = 0  # source files whose segments were labelled
        self.speakers = 0  # labels given, all files together
        self.cut_segments = 0  # asr segments cut at speaker changes
        self.speaker_changes = 0  # cuts made (pieces written less the segments cut)
        self.overlap_trimmed = 0  # pieces whose edges were trimmed where two voices overlap
        self.overlap_dropped = 0  # pieces nothing was left of
        self.overlap_trimmed_words = 0  # asr words trimmed with them

    def add(self, rec: QualityRecord) -> None:
        self.annotated += 1
        self.multi_speaker += bool(rec.multi_speaker)
        self.fidelity_checked += rec.fidelity_cer is not None
        self.changed_text += bool(rec.restoration_changed_text)
        self.ovrl_before += rec.dnsmos_before.ovrl
        self.ovrl_after += rec.dnsmos_after.ovrl

    def as_dict(self) -> dict[str, Any]:
        n = max(self.annotated, 1)
        return {"annotated": self.annotated, "multi_speaker": self.multi_speaker,
                "fidelity_checked": self.fidelity_checked,
                "restoration_changed_text": self.changed_text,
                "mean_ovrl_before": round(self.ovrl_before / n, 3),
                "mean_ovrl_after": round(self.ovrl_after / n, 3),
                "speaker_files": self.speaker_files, "speakers": self.speakers,
                "cut_segments": self.cut_segments, "speaker_changes": self.speaker_changes,
                "overlap_trimmed": self.overlap_trimmed,
                "overlap_dropped": self.overlap_dropped,
                "overlap_trimmed_words": self.overlap_trimmed_words}
