"""The quality annotations in a run (docs/quality.md): their distributions and the hours each
filter removed, from the tokens JSONL (kept segments carry their ``quality``) and the tokenize
done records (every skipped segment with its reasons, seconds and ``quality``); for a shard
with no tokens yet (tokenize not run, or no codec weights), from its enhanced sidecars, where
enhance wrote the annotations."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

from services.ops.report.charts import barh, chart, largest_first
from services.records import Quality, Sidecar, TokenLine
from services.rules.skipped import Skipped

TOP_SPEAKERS = 30  # speakers named in the report; the rest are counted


@dataclass
class QualityData:
    ovrl_before: list[float] = field(default_factory=list)
    ovrl_after: list[float] = field(default_factory=list)
    consistency: list[float] = field(default_factory=list)
    fidelity_cer: list[float] = field(default_factory=list)
    annotated_seconds: float = 0.0
    kept_seconds: float = 0.0  # annotated and tokenized
    skipped_seconds: float = 0.0
    # seconds per reason
    skipped_by_reason: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    overlap: list[float] = field(default_factory=list)  # share of voiced time, two talkers
    music: list[float] = field(default_factory=list)  # share of the pauses under a held tone
    enhanced_seconds: float = 0.0  # read from sidecars (shards without tokens)
    # corpus speaker -> seconds
    speaker_seconds: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    text_spoken: Counter[str] = field(default_factory=Counter)  # its writer ("" none) -> segments

    def _add(self, q: Quality | None, seconds: float) -> None:
        if q is None:
            return
        self.annotated_seconds += seconds
        self._charts(q)

    def _charts(self, q: Quality) -> None:
        for mos, out in ((q.dnsmos_before, self.ovrl_before), (q.dnsmos_after, self.ovrl_after)):
            if mos is not None and mos.ovrl is not None:
                out.append(float(mos.ovrl))
        for v, out in ((q.speaker_consistency, self.consistency),
                       (q.fidelity_cer, self.fidelity_cer), (q.overlap, self.overlap),
                       (q.music, self.music)):
            if v is not None:
                out.append(float(v))

    def _segment(self, speaker: str | None, spoken_by: str | None, seconds: float) -> None:
        if speaker:
            self.speaker_seconds[speaker] += seconds
        self.text_spoken[spoken_by or ""] += 1

    def add_line(self, row: TokenLine, speaker: str | None = None) -> None:
        """A tokens JSONL line (a kept segment); ``speaker``: its label as the corpus names
        it."""
        seconds = float(row.duration_seconds)
        self._segment(speaker, row.text_spoken_by, seconds)
        if row.quality is not None:
            self._add(row.quality, seconds)
            self.kept_seconds += seconds

    def add_sidecar(self, meta: Sidecar, speaker: str | None = None) -> None:
        """An enhanced segment's sidecar, of a shard with no tokens."""
        seconds = float(meta.duration_seconds or 0.0)
        self.enhanced_seconds += seconds
        self._segment(speaker, meta.text_spoken_by, seconds)
        self._add(meta.quality, seconds)

    def add_skipped(self, skipped: Skipped) -> None:
        """A tokenize done record's skipped segments: every figure from the tally, the charts
        from the entries it lists (the first of them when there were many)."""
        tally = skipped.tally
        self.annotated_seconds += tally.seconds_annotated
        self.skipped_seconds += tally.seconds
        for reason, seconds in tally.seconds_by_reason.items():
            self.skipped_by_reason[reason] += seconds  # duplicate_of:<id> under duplicate_of
        for entry in skipped.entries:
            if entry.quality is not None:
                self._charts(entry.quality)

    def as_dict(self) -> dict[str, Any]:
        def mean(xs: list[float]) -> float | None:
            return round(sum(xs) / len(xs), 3) if xs else None

        return {"annotated_hours": self.annotated_seconds / 3600,
                "kept_hours": self.kept_seconds / 3600,
                "enhanced_hours_without_tokens": self.enhanced_seconds / 3600,
                "speakers": len(self.speaker_seconds),
                "speaker_hours": {k: v / 3600 for k, v in
                                  largest_first(self.speaker_seconds, TOP_SPEAKERS)},
                "text_spoken_by": dict(self.text_spoken.most_common()),
                "mean_overlap": mean(self.overlap),
                "mean_music": mean(self.music),
                "skipped_hours": self.skipped_seconds / 3600,
                "skipped_hours_by_reason": {k: v / 3600 for k, v in
                                            largest_first(self.skipped_by_reason)},
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
             "enhanced, no tokens yet": q.enhanced_seconds / 3600,
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
        ("overlap_music", "Overlapped speech and music per segment (quality.overlap, .music)",
         hist("Overlap and music", [("overlap", q.overlap, "#c44e52"),
                                    ("music", q.music, "#8172b2")], "share (0-1)")),
        ("speaker_hours", f"Hours per speaker (the {TOP_SPEAKERS} largest)",
         barh("Hours per speaker", {k: v / 3600 for k, v in
                                    largest_first(q.speaker_seconds, TOP_SPEAKERS)},
              "hours", "#4c72b0")),
        ("filters", "Hours kept and removed per filter",
         barh("Hours kept and removed per filter", {k: v for k, v in hours.items() if v},
              "hours", "#dd8452")),
    ]
