"""What trainers select on, across a run (docs/quality.md): speakers per source file, segments
per speaker, and the pitch and speaking-rate distributions, from whatever stage has the fields:
the tokens JSONL (kept segments carry ``speaker_id`` and ``quality``) and, for a shard without
tokens (tokenize not run, or no codec weights: the README's quick start), the enhanced
sidecars, where enhance wrote the same fields."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from services.ops.report.charts import chart
from services.records import Sidecar, TokenLine, corpus_id, local_name, shard_of


@dataclass
class TrainerData:
    # speaker label as the corpus names it (services.records.corpus_id) -> segments
    segments_per_speaker: Counter[str] = field(default_factory=Counter)
    pitch_mean: list[float] = field(default_factory=list)  # Hz, one per segment
    rates: dict[str, list[float]] = field(default_factory=dict)  # unit -> speaking rates
    min_word_probability: list[float] = field(default_factory=list)

    def add_line(self, row: TokenLine | Sidecar, shard: int | None = None) -> None:
        """A tokens line, or the sidecar of a segment with no tokens line; ``shard``: the
        row's (its speaker label names a voice within it)."""
        if row.speaker_id:
            label = row.speaker_id if shard is None else corpus_id(row.speaker_id, shard)
            self.segments_per_speaker[label] += 1
        if row.min_word_probability is not None:
            self.min_word_probability.append(float(row.min_word_probability))
        q = row.quality
        if q is None:
            return
        if q.pitch is not None:
            self.pitch_mean.append(float(q.pitch.mean))
        if q.speaking_rate is not None:
            self.rates.setdefault(q.speaking_rate_unit or "?", []).append(float(q.speaking_rate))

    def speakers_per_file(self) -> Counter[tuple[str, int | None]]:
        """source file (its key, with its shard where known) -> distinct speakers among its
        kept segments."""
        return Counter((local_name(sid).rsplit("#", 1)[0], shard_of(sid))
                       for sid in self.segments_per_speaker)

    def as_dict(self) -> dict[str, Any]:
        def median(xs: list[float]) -> float | None:
            return round(sorted(xs)[len(xs) // 2], 3) if xs else None

        per_file = self.speakers_per_file()
        return {"files_labelled": len(per_file), "speakers": len(self.segments_per_speaker),
                "files_by_speakers": dict(sorted(Counter(per_file.values()).items())),
                "median_segments_per_speaker": median(
                    [float(v) for v in self.segments_per_speaker.values()]),
                "median_pitch_hz": median(self.pitch_mean),
                "median_speaking_rate": {u: median(v) for u, v in self.rates.items()}}


def charts(t: TrainerData) -> list[tuple[str, str, str]]:
    """``(id, caption, png base64)`` for the HTML report."""
    def bars(title: str, counts: Counter[Any], xlabel: str) -> str:
        def draw(ax: Any) -> None:
            keys = sorted(counts)
            ax.bar([str(k) for k in keys], [counts[k] for k in keys], color="#4c72b0")
            ax.set_xlabel(xlabel)
            ax.set_ylabel("count")

        return chart(title, draw if counts else None)

    def hist(title: str, series: dict[str, list[float]], xlabel: str) -> str:
        def draw(ax: Any) -> None:
            for label, xs in series.items():
                if xs:
                    ax.hist(xs, bins=30, alpha=0.6, label=f"{label} (n={len(xs)})")
            ax.set_xlabel(xlabel)
            ax.set_ylabel("segments")
            ax.legend(fontsize=8)

        return chart(title, draw if any(series.values()) else None)

    per_speaker = Counter(min(v, 50) for v in t.segments_per_speaker.values())
    return [
        ("speakers_per_file", "Speakers per source file (speaker_id)",
         bars("Speakers per source file", Counter(t.speakers_per_file().values()), "speakers")),
        ("segments_per_speaker", "Kept segments per speaker (50: 50 or more)",
         bars("Segments per speaker", per_speaker, "segments")),
        ("pitch", "Mean pitch per segment (Hz)",
         hist("Pitch (mean f0 per segment)", {"segments": t.pitch_mean}, "Hz")),
        ("speaking_rate", "Speaking rate per segment",
         hist("Speaking rate", t.rates, "units per second of speech")),
    ]
