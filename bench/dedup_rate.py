"""What the candidate keys cost at corpus scale, from real speech: how often the audio keys
propose a pair of unrelated recordings, and the confirmation time that makes at 200,000,000
segments (docs/dedup.md, "Scale").

Every pair of real clips that is not a copy: fillets-ng-data's English dialog lines from every
level (the sound files its scripts give a line of text; not its music, songs and effects,
which the asr stage would not keep) and the pocketsphinx clips. The chance that a pair shares
an audio key is exactly ``1 - (1 - J^rows)^bands`` for the Jaccard J of their landmark sets
(MinHash's collision probability; both families' bands when both clips are short enough for
the second), averaged over the pairs; pairs whose durations fail the
candidate rule are not proposed. The game data holds a few true copies (one line in two
levels' folders): found by the fingerprint and counted, not taken as unrelated.
"""

from __future__ import annotations

import functools
import itertools
import os
import time
from dataclasses import dataclass

import numpy as np

from services.dedup.landmarks import SHORT_SECONDS

CORPUS_SEGMENTS = 200e6


def _clips() -> list[np.ndarray]:
    import re

    from common.shards.audio import decode_audio
    from fixtures.dedup_corpus import FILLETS, SR, originals

    spoken = {name for f in FILLETS.glob("script/*/dialogs_en.lua")
              for name in re.findall(r'dialogId\("([^"]+)",\s*"[^"]*",\s*"[^"]+"\)',
                                   f.read_text(errors="replace"))}
    out = [decode_audio(p.read_bytes(), SR) for p in sorted(FILLETS.glob("sound/*/en/*.ogg"))
           if p.stem in spoken]
    out += [c.audio for c in originals()]
    return [a for a in out if a.size >= SR]


SHORT_SHARE = float(os.environ.get("ONSEI_BENCH_DEDUP_SHORT_SHARE", "0.10"))


@dataclass
class Rate:
    per_pair: float  # the main audio family's chance per unrelated pair, duration rule applied
    before: float  # the same before the duration rule
    short_pair: float  # both families' chance per unrelated pair of two short clips
    per_confirm: float  # CPU s per screened confirmation
    per_confirm_short: float  # the same for a pair of two short clips
    pairs: int
    short_pairs: int
    copies: int  # true copies found in the data and set aside


@functools.lru_cache(maxsize=2)
def unrelated_rate(quick: bool) -> Rate | None:
    """What unrelated pairs of real clips cost; None without the Debian data."""
    from fixtures.dedup_corpus import SR
    from services.dedup import landmarks as lm
    from services.dedup.fingerprint import compare, fingerprint_of, power_of, telephone_rate
    from services.dedup.settings import DedupSettings
    from services.dedup.verify import SCREEN_MARGIN, Rule

    clips = _clips()
    if len(clips) < 50:
        return None
    s = DedupSettings()
    rule = Rule(s.dedup_max_ber, s.dedup_min_overlap, s.dedup_max_shift_seconds)
    xs = [telephone_rate(a, SR) for a in clips]
    codes = [set(lm.landmark_set(x).tolist()) for x in xs]  # the signature's: every phase
    fps = [fingerprint_of(power_of(x)) for x in xs]
    secs = np.array([a.size / SR for a in clips])
    copies = 0
    probs, passes, short = [], [], []
    cost, timed = {False: 0.0, True: 0.0}, {False: 0, True: 0}
    for i, j in itertools.combinations(range(len(clips)), 2):
        a, b = codes[i], codes[j]
        jac = len(a & b) / max(1, len(a | b))
        ok = abs(secs[i] - secs[j]) <= (s.dedup_duration_slack_seconds
                                         + s.dedup_duration_slack_fraction
                                         * min(secs[i], secs[j]))
        # a real copy in the game data? the fingerprint says
        if jac > 0.3 and compare(fps[i], fps[j], rule.max_shift,
                                 rule.min_overlap).ber <= rule.max_ber:
            copies += 1
            continue
        probs.append(lm.collision_probability(jac, short=False))
        passes.append(ok)
        both_short = max(secs[i], secs[j]) <= lm.SHORT_SECONDS  # both with the short keys
        if ok and both_short:
            short.append(lm.collision_probability(jac, short=True))
        if ok and timed[both_short] < (300 if quick else 2000):
            t0 = time.process_time()
            compare(fps[i], fps[j], rule.max_shift, rule.min_overlap,
                    rule.max_ber + SCREEN_MARGIN)
            cost[both_short] += time.process_time() - t0
            timed[both_short] += 1
    p = np.array(probs)
    ok = np.array(passes)
    every = (cost[False] + cost[True]) / max(1, timed[False] + timed[True])
    return Rate(float((p * ok).mean()), float(p.mean()),
                float(np.mean(short)) if short else 0.0, every,
                cost[True] / timed[True] if timed[True] else every, p.size, len(short), copies)


def projected_pairs(r: Rate, short_share: float = SHORT_SHARE) -> tuple[float, float]:
    """Unrelated audio-key pairs at 200M segments: the main family's over every pair, and the
    short family's over the pairs of two short segments (``short_share`` of the corpus)."""
    return (r.per_pair * CORPUS_SEGMENTS ** 2 / 2,
            r.short_pair * (short_share * CORPUS_SEGMENTS) ** 2 / 2)


def projected_cpu_hours(quick: bool, short_share: float = SHORT_SHARE) -> float:
    """CPU hours confirming the unrelated pairs the audio keys propose at 200M segments, each
    at what a pair of its kind costs."""
    r = unrelated_rate(quick)
    if r is None:
        return 0.0
    main, short = projected_pairs(r, short_share)
    return (main * r.per_confirm + short * r.per_confirm_short) / 3600


def candidate_rate(quick: bool) -> list[dict]:
    r = unrelated_rate(quick)
    if r is None:
        return []
    hours = projected_cpu_hours(quick)
    return [
        {"name": f"dedup candidates: chance an unrelated real-speech pair is proposed by the "
                 f"audio keys ({r.pairs:,} pairs of real clips, duration rule applied; "
                 f"{r.copies} true copies in the data set aside)",
         "ours": f"{r.per_pair:.2e}", "baseline": f"{r.before:.2e}", "ratio": None,
         "goal": "info (baseline: before the duration rule)", "unit": "per pair"},
        {"name": f"dedup candidates: the same for two clips of {SHORT_SECONDS:g} s or less, "
                 f"with their short family's keys ({r.short_pairs:,} pairs)",
         "ours": f"{r.short_pair:.2e}", "baseline": None, "ratio": None, "goal": "info",
         "unit": "per pair"},
        {"name": "dedup candidates: projected unrelated audio-key pairs at 200,000,000 "
                 f"segments ({SHORT_SHARE:.0%} of them {SHORT_SECONDS:g} s or less), and "
                 "their confirmation",
         "ours": f"{sum(projected_pairs(r)):.2e}",
         "baseline": f"{r.per_confirm * 1e6:.0f} / {r.per_confirm_short * 1e6:.0f}",
         "ratio": round(hours, 2),
         "goal": "info (baseline: CPU us per confirmation, screened, of any pair / of two "
                 "short clips; ratio: CPU hours, divide by the cores)", "unit": "pairs"},
    ]


ROWS = [candidate_rate]
