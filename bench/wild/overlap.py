"""Overlapping talkers on real voices (``services/enhance/quality/overlap.py``; docs/quality.md).

Each single line of the voices of ``bench.wild.speakers`` against the same line with another
voice's line mixed in at 0, 5 and 10 dB below it (levels by RMS): the share of mixtures at 0-5 dB
scored >= 0.3 (goal >= 0.9), of single lines (goal <= 3 %). Cost: CPU seconds per audio hour of
the overlap score on the CPU (at a GPU node its FFTs run on the device), beside the change
scan's on the same lines.
"""

from __future__ import annotations

import json

import numpy as np

from bench.wild.speakers import SR, scan_cost_rows, voices


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


def overlap_rows(quick: bool) -> list[dict]:
    import time

    import torch

    from services.enhance.quality.overlap import overlap

    singles, mixed = mixtures(voices(prompts=True))
    if not singles:
        return []
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as a worker runs it: idle threads would count as CPU
    try:
        t0 = time.process_time()
        alone = [(k, overlap(c) or 0.0) for k, c in singles]
        cpu = time.process_time() - t0
        scan = scan_cost_rows([c for _, c in singles])
    finally:
        torch.set_num_threads(threads)
    hours = sum(c.size for _, c in singles) / SR / 3600
    both = [(db, name, overlap(x) or 0.0) for db, name, x in mixed]
    rows = []
    for label, keep in (("all", lambda n: True),
                        ("natural voices", lambda n: "fillets" not in n),
                        ("fillets character voices", lambda n: "fillets" in n)):
        loud = [x >= 0.3 for db, n, x in both if db <= 5 and keep(n)]
        quiet = [x >= 0.3 for db, n, x in both if db == 10 and keep(n)]
        one = [x >= 0.3 for k, x in alone if keep(k)]
        rows += [{"name": f"overlap >= 0.3, real voices mixed at 0-5 dB, {label}",
                  "ours": round(float(np.mean(loud)), 3), "baseline": None, "ratio": None,
                  "unit": f"share of {len(loud)} (10 dB: {np.mean(quiet):.3f})",
                  "goal": ">= 0.9"},
                 {"name": f"overlap >= 0.3, single real voices, {label}",
                  "ours": round(float(np.mean(one)), 3), "baseline": None, "ratio": None,
                  "unit": f"share of {len(one)}", "goal": "<= 0.03"}]
    rows.append({"name": "overlap score, CPU s per audio hour (torch on the CPU, 1 thread)",
                 "ours": round(cpu / hours, 1), "baseline": None, "ratio": None,
                 "unit": "CPU s / audio h", "goal": "on the device at a GPU node"})
    return rows + scan


ROWS = [overlap_rows]

if __name__ == "__main__":
    for row in overlap_rows(False):
        print(json.dumps(row))
