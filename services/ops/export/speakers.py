"""The card's speakers: how many voices hold how many hours (a histogram on a log scale of
hours), the voices with the most, and what the caps on hours per speaker and per source left
out. A voice is a corpus speaker (``onsei speakers``: the same voice across files) where the
lines have one, else a speaker label within a file; lines with neither are counted apart."""

from __future__ import annotations

from itertools import pairwise

from services.ops.export import markdown as md
from services.ops.export.caps import SOURCE, SPEAKER, Caps
from services.ops.export.write import Written

# upper edges (hours) of the histogram's bins; the last is open
EDGES = (0.01, 0.1, 1.0, 10.0, 100.0)
TOP = 10


def histogram(seconds: list[float]) -> list[tuple[str, int, float]]:
    """(bin, speakers, hours) for each bin of hours per speaker, empty bins included."""
    bins = [f"< {EDGES[0]:g} h", *(f"{a:g}-{b:g} h" for a, b in pairwise(EDGES)),
            f">= {EDGES[-1]:g} h"]
    counts, hours = [0] * len(bins), [0.0] * len(bins)
    for s in seconds:
        h = s / 3600
        i = next((k for k, edge in enumerate(EDGES) if h < edge), len(EDGES))
        counts[i] += 1
        hours[i] += h
    return list(zip(bins, counts, hours))


def speaker_section(w: Written, caps: Caps) -> list[str]:
    voiced = {k: v for k, v in w.speaker_seconds.items() if k}
    unlabelled = w.speaker_seconds.get("", 0.0)
    # a voice is in one split (its group's); sorted, so a broken invariant still names one
    split_of = {k: split for split in sorted(w.speakers, reverse=True) for k in w.speakers[split]}
    out = ["## Speakers", "",
           f"{len(voiced)} speakers" + (f"; {md.hours(unlabelled)} hours without a speaker "
                                        "label" if unlabelled else "") + ".", "",
           *md.table(["hours per speaker", "speakers", "hours"],
                     [[md.text(b), str(n), f"{h:.3f}"]
                      for b, n, h in histogram(list(voiced.values()))]), "",
           *md.table(["speaker (most hours first)", "hours", "segments", "split"],
                     [[md.code(k, True), md.hours(v), str(w.speaker_lines[k]), split_of.get(k, "")]
                      for k, v in sorted(voiced.items(), key=lambda kv: (-kv[1], kv[0]))[:TOP]])]
    if caps:
        limits = caps.describe()
        out += ["", *md.table(
            ["cap", "hours each", "segments left out", "hours left out"],
            [[md.code(f"--{cap.replace('_', '-')}", True), f"{limits[cap]:g}",
              str(w.capped.segments[cap]), md.hours(w.capped.seconds[cap])]
             for cap in (SPEAKER, SOURCE) if cap in limits]),
            "", ("Caps keep each speaker's and each source file's lines in the order of the "
                 "hash of their ids (the same seed, the same lines), while both stay under "
                 "their cap.")]
    return out + [""]
