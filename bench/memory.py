"""Peak memory a long member costs over a short one, per stage: the real command beside the
engine with instant models.

Rows: ``onsei run`` itself with every default on and the real offline models
(bench/member_memory.py: 3 hours against 2 minutes; ``--quick``: 30 minutes), and the stage
through the attempt engine with models that answer at once (bench/feed_memory.py: 20 minutes
against 2). Goal: at most 250 MB more (docs/operations.md).
"""

from __future__ import annotations

GOAL_MB = 250.0


def _row(name: str, short: float, long: float, unit: str) -> dict:
    grew = long - short
    return {"name": name, "ours": round(grew, 1), "baseline": None,
            "ratio": round(grew / GOAL_MB, 3), "goal": f"<= {GOAL_MB:g} MB (ratio <= 1)",
            "unit": unit}


def real_command(quick: bool) -> list[dict]:
    from bench.member_memory import measure

    minutes = 30.0 if quick else 180.0
    short, long = measure(2.0), measure(minutes)
    return [_row(f"memory onsei run --stages {stage}: {minutes:g} min member - 2 min (real "
                 "models, every default on)", short[stage]["peak_mb"], long[stage]["peak_mb"],
                 f"MB peak RSS ({short[stage]['peak_mb']:.0f} -> {long[stage]['peak_mb']:.0f})")
            for stage in ("asr", "enhance")]


def instant_models(quick: bool) -> list[dict]:
    from bench.feed_memory import measure

    rows = []
    for stage in ("asr", "enhance"):
        short, long = measure(stage, 120.0), measure(stage, 1200.0)
        rows.append(_row(f"memory {stage} engine, instant models: 20 min member - 2 min",
                         short, long, f"MB peak RSS ({short:.0f} -> {long:.0f})"))
    return rows


ROWS = [real_command, instant_models]
