"""The quality annotations in a run (docs/quality.md): their distributions and the hours each
filter removed, from the tokens JSONL (kept segments carry their ``quality``) and the tokenize
done records (every skipped segment with its reasons, seconds and ``quality``)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from services.ops.report.charts import barh, chart
from services.records import Quality, SkippedSegment, TokenLine
from services.tokenize.filter import reason_kind


@dataclass
class QualityData:
    ovrl_before: list[float] = field(default_factory=list)
    ovrl_after: list[float] = field(default_factory=list)
    consistency: list[float] = field(default_factory=list)
    fidelity_cer: list[float] = field(default_factory=list)
    annotated_seconds: float = 0.0
    kept_seconds: float = 0.0  # annotated and tokenized
    skipped_seconds: float = 0.0
    skipped_by_reason: Counter = field(default_factory=Counter)  # seconds per reason

    def _add(self, q: Quality | None, seconds: float) -> None:
        if q is None:
            return
        self.annotated_seconds += seconds
        for mos, out in ((q.dnsmos_before, self.ovrl_before), (q.dnsmos_after, self.ovrl_after)):
            if mos is not None and mos.ovrl is not None:
                out.append(float(mos.ovrl))
        for v, out in ((q.speaker_consistency, self.consistency),
                       (q.fidelity_cer, self.fidelity_cer)):
            if v is not None:
                out.append(float(v))

    def add_line(self, row: TokenLine) -> None:
        """A tokens JSONL line (a kept segment)."""
        if row.quality is not None:
            self._add(row.quality, float(row.duration_seconds))
            self.kept_seconds += float(row.duration_seconds)

    def add_skipped(self, entry: SkippedSegment) -> None:
        """One entry of a tokenize done record's ``skipped``."""
        seconds = float(entry.seconds)
        self._add(entry.quality, seconds)
        self.skipped_seconds += seconds
        for reason in dict.fromkeys(reason_kind(r) for r in entry.reasons):
            self.skipped_by_reason[reason] += seconds  # duplicate_of:<id> under duplicate_of

    def as_dict(self) -> dict[str, Any]:
        def mean(xs: list[float]) -> float | None:
            return round(sum(xs) / len(xs), 3) if xs else None

        return {"annotated_hours": self.annotated_seconds / 3600,
                "kept_hours": self.kept_seconds / 3600,
                "skipped_hours": self.skipped_seconds / 3600,
                "skipped_hours_by_reason": {k: v / 3600 for k, v in
                                            self.skipped_by_reason.most_common()},
                "mean_ovrl_before": mean(self.ovrl_before),
                "mean_ovrl_after": mean(self.ovrl_after),
                "mean_speaker_consistency": mean(self.consistency),
                "fidelity_checked": len(self.fidelity_cer),
                "mean_fidelity_cer": mean(self.fidelity_cer)}


def charts(q: QualityData) -> list[tuple[str, str, str]]:
    """``(id, caption, png base64)`` for the HTML report."""

    def hist(title: str, series: list[tuple[str, list[float], str]], xlabel: str) -> str:
        def draw(ax: Any) -> None:
            for label, xs, color in series:
                if xs:
                    ax.hist(xs, bins=30, alpha=0.6, color=color, label=f"{label} (n={len(xs)})")
            ax.set_xlabel(xlabel)
            ax.set_ylabel("segments")
            ax.legend(fontsize=8)

        return chart(title, draw if any(xs for _, xs, _ in series) else None)

    hours = {"kept": q.kept_seconds / 3600,
             **{f"skipped: {k}": v / 3600 for k, v in q.skipped_by_reason.items()}}
    return [
        ("dnsmos", "DNSMOS OVRL before / after restoration",
         hist("DNSMOS OVRL before / after restoration",
              [("before", q.ovrl_before, "#c44e52"), ("after", q.ovrl_after, "#55a868")],
              "OVRL (1-5)")),
        ("speaker", "Speaker consistency (multi_speaker below the threshold)",
         hist("Speaker consistency", [("segments", q.consistency, "#4c72b0")],
              "min cosine between parts")),
        ("fidelity", "Restoration fidelity (re-transcription CER, sampled)",
         hist("Restoration fidelity", [("sampled", q.fidelity_cer, "#8172b2")], "CER")),
        ("filters", "Hours kept and removed per filter",
         barh("Hours kept and removed per filter", {k: v for k, v in hours.items() if v},
              "hours", "#dd8452")),
    ]
