"""The trained detectors' onset, held out, on the voices and mixtures of ``bench/wild/overlap.py``
(docs/quality.md, "A trained detector").

Each detector's overlap probability is read once per clip on the pitch test's 20 ms grid
(``overlap_model.ModelTest.grid``); a clip's score at onset ``o`` is the share of its loud frames
at ``o`` or above, and beside the pitch test (``overlap_both.py``) the pitch test's score where
that is at least the floor and larger. Figures per detector and onset (its published one, 0.5,
and each fold's pick): mixtures at 0-5 dB scored >= 0.3, at 10 dB, single lines >= 0.3, per voice
group. Held out: on alternate lines of each voice (and their mixtures) the onset of ``ONSETS``
with the most 0-5 dB mixtures at 0.3 and no more than 3 % of that half's single lines (the
highest such onset on a tie), measured on the other half. Cost: CPU s per audio hour of each
detector on the single lines (one thread).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

ONSETS = [round(float(o), 3) for o in np.arange(0.1, 0.91, 0.025)]
BAR = 0.3
GROUPS: dict[str, Callable[[str], bool]] = {
    "all": lambda v: True,
    "natural": lambda v: "fillets" not in v,
    "fillets (either side)": lambda v: "fillets" in v,
    "with the p voice": lambda v: "fillets-p" in v,
    "with l, not p": lambda v: "fillets-l" in v and "fillets-p" not in v,
}


@dataclass
class Clip:
    voice: str  # "voice" for a single line, "voice|other" for a mixture
    db: int | None  # None: a single line
    fold: int  # alternate lines of each voice; a mixture's: its line's
    prob: np.ndarray  # the detector's probability on the loud frames
    pitch: float  # the pitch test's score

    def score(self, onset: float, floor: float) -> float:
        own = float((self.prob >= onset).mean()) if self.prob.size else 0.0
        return max(own, self.pitch) if floor > 0 and self.pitch >= floor else own


def clips(weights: str) -> tuple[list[Clip], float]:
    """Every single line and mixture with the detector's loud-frame probabilities, and the
    detector's CPU s per audio hour on the single lines."""
    import torch

    from bench.wild.overlap import mixtures
    from bench.wild.speakers import SR, voices
    from research.wild.overlap_multipitch import mixture_lines
    from services.enhance.quality import overlap
    from services.enhance.quality.overlap_model import ModelTest, load_segmentation, published_onset
    from services.enhance.resampled import Resampled
    from services.enhance.settings import EnhanceSettings

    singles, mixed = mixtures(voices(prompts=True))
    model = load_segmentation(weights, EnhanceSettings())
    test = ModelTest(model, published_onset(model), name=weights)
    pitch = overlap.PitchTest()
    torch.set_num_threads(1)

    def loud(x: np.ndarray) -> tuple[np.ndarray, float]:
        if x.size < overlap.MIN_SECONDS * SR:
            return np.zeros(0, bool), 0.0
        f = pitch.frames(x, SR, Resampled())
        return f.loud, f.share()

    def probs(x: np.ndarray, gate: np.ndarray) -> np.ndarray:
        return test.grid(x, SR, Resampled(), gate.size)[gate] if gate.size else np.zeros(0)

    count: dict[str, int] = {}
    folds = []
    for k, _ in singles:
        folds.append(count.get(k, 0) % 2)
        count[k] = count.get(k, 0) + 1
    gates = [loud(c) for _, c in singles]
    t0 = time.process_time()
    got = [probs(c, g) for (_, c), (g, _) in zip(singles, gates)]
    cost = (time.process_time() - t0) / (sum(c.size for _, c in singles) / SR / 3600)
    out = [Clip(k, None, f, p, s) for (k, _), f, p, (_, s) in zip(singles, folds, got, gates)]
    for (db, name, x), i in zip(mixed, mixture_lines(singles), strict=True):
        g, s = loud(x)
        out.append(Clip(name, db, folds[i], probs(x, g), s))
    return out, cost


def figures(cl: list[Clip], onset: float, floor: float) -> dict[str, str]:
    out = {}
    for g, keep in GROUPS.items():
        mix = [c.score(onset, floor) >= BAR for c in cl
               if c.db is not None and c.db <= 5 and keep(c.voice)]
        ten = [c.score(onset, floor) >= BAR for c in cl if c.db == 10 and keep(c.voice)]
        one = [c.score(onset, floor) >= BAR for c in cl if c.db is None and keep(c.voice)]
        out[g] = (f"{np.mean(mix):.3f} of {len(mix)} (10 dB {np.mean(ten):.3f}), singles "
                  f"{sum(one)} of {len(one)}" if one else
                  f"{np.mean(mix):.3f} of {len(mix)} (10 dB {np.mean(ten):.3f})")
    return out


def pick(cl: list[Clip], floor: float) -> float:
    """The onset with the most 0-5 dB mixtures of ``cl`` at the bar and at most 3 % of its
    single lines (the highest on a tie)."""
    singles = [c for c in cl if c.db is None]
    mixed = [c for c in cl if c.db is not None and c.db <= 5]
    allowed = int(0.03 * len(singles))
    ok = [o for o in ONSETS if sum(c.score(o, floor) >= BAR for c in singles) <= allowed]
    return max(ok, key=lambda o: (sum(c.score(o, floor) >= BAR for c in mixed), o))


def main() -> None:
    import argparse

    from fixtures.pyannote_models import segmentation3_weights, segmentation_weights
    from services.enhance.quality.overlap_model import MULTILABEL_ONSET, POWERSET_ONSET

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--floor", type=float, default=0.5, help="the pitch floor beside")
    args = ap.parse_args()
    for label, published, get in (
            ("pyannote/segmentation", MULTILABEL_ONSET, segmentation_weights),
            ("pyannote/segmentation-3.0", POWERSET_ONSET, segmentation3_weights)):
        weights = get(fetch=True)
        if weights is None:
            print(json.dumps({"detector": label, "skipped": "weights cannot be had"}))
            continue
        cl, cost = clips(str(weights))
        print(json.dumps({"detector": label, "CPU s per audio hour (1 thread)": round(cost, 1)}))
        for floor in (0.0, args.floor):
            beside = f", pitch test >= {floor:g} beside" if floor else ""
            for onset in sorted({published, 0.5}):
                print(json.dumps({"detector": label + beside, "onset": onset,
                                  **figures(cl, onset, floor)}))
            for tune in (0, 1):
                o = pick([c for c in cl if c.fold == tune], floor)
                print(json.dumps({"detector": label + beside, "onset picked on fold": tune,
                                  "onset": o, "measured on the other fold": figures(
                                      [c for c in cl if c.fold != tune], o, floor)}))
            best = pick(cl, floor)
            print(json.dumps({"detector": label + beside, "onset picked on all": best,
                              **figures(cl, best, floor)}))


if __name__ == "__main__":
    main()
