"""Bench modules, each exposing ``ROWS``: callables ``(quick: bool) -> list[dict]``.

A row dict: ``{"name", "ours", "baseline", "ratio", "goal", "unit"}``.
"""

MODULES: list[str] = [
    "shards", "storage", "enhance", "orchestration", "tokenize", "asr", "quality", "dedup",
    "export", "trainers",
    "text",  # text_spoken, Japanese reading and accent, and their cost (docs/text.md)
    "segments",  # sentence punctuation kept, segments cut at sentence ends (docs/asr.md)
    "speakers",  # one speaker label across files and shards (docs/speakers.md)
    "provenance",  # takedowns over a large index, the test-set scrub (docs/provenance.md)
    "wild",  # podcasts and video: speaker turns, overlap, music, code-switching
    "filters_early",  # model seconds on segments dropped later (docs/quality.md)
    "filters",  # false drops of every default filter on clean speech (docs/quality.md)
    "short_segments",  # what a lower asr segment minimum keeps on noise and saves (quality.md)
    "language_short",  # language ID of short lone clips, both ways (docs/quality.md)
    "feed",  # CPU per audio hour outside the model (docs/operations.md)
    "memory",  # peak RSS of a long member over a short one (docs/operations.md)
    "stage_process",  # each stage as `onsei run --stages X`, whole-process rusage (operations.md)
    "scale",  # minutes: real fleets over 2,000 shards, control plane at 50,000
]
