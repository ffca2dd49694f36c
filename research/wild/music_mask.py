"""The learned speech/music mask (research/wild/music_mask_net.py) against the bed WER goal
(<= 1.25x clean), with the protocol of research/wild/music_repetition.py: 2 (``QUICK=1``) or 5 min
of LibriVox and card readings, the bench's bed at 10 and 5 dB under both track orders
(``bed_track`` seeds 0 and 1), WER of the kept text / WER of the clean file untreated.

Rows: each method's ratios; clean WER with the mask (gated, and applied everywhere); CPU seconds
per audio hour of the mask (clean: the gate alone; under a bed: gate, network, inverse STFT).
The weights come from research/wild/music_mask_train.py (``--model``; trained on music and speech
disjoint from these). ``QUICK=1 python -m research.wild.music_mask [--model PATH]
[--no-baseline]``.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from bench.wild.music import bed_track, under
from bench.wild.music_suppression import _stage, bed_ratios, wer_of
from fixtures.longform import SR, real_english, real_longform
from research.wild.music_mask_net import WEIGHTS


def mask_rows(quick: bool, model: Path, baseline: bool = True) -> list[dict]:
    from research.wild.music_mask_net import MaskNet, separate
    from services.asr.music import suppress

    net = MaskNet.load(model)
    form = real_longform(real_english(), seconds=120 if quick else 300, seed=3)
    methods: dict[str, Callable[[np.ndarray], np.ndarray]] = {
        "learned mask (gated)": lambda x: separate(x, net, 0.75)[0]}
    if baseline:
        methods = {"none": lambda x: x, "held tones": lambda x: suppress(x, 0.75)[0],
                   **methods}
    rows = []
    with tempfile.TemporaryDirectory(prefix="onsei-bench-music-mask-") as d:
        stage = _stage(Path(d), False)

        wer = wer_of(stage, form)
        clean = wer(form.audio)
        gated, blocks = separate(form.audio, net, 0.75)
        rows.append({"name": "wild music mask: clean WER, mask gated / everywhere "
                             f"(baseline: untreated; {blocks} blocks treated)",
                     "ours": [round(wer(gated), 4) if blocks else round(clean, 4),
                              round(wer(separate(form.audio, net, 0.0)[0]), 4)],
                     "baseline": round(clean, 4), "goal": "not higher"})
        print(rows[-1], flush=True)
        for name, fn in methods.items():
            got, _ = bed_ratios(form, fn, wer, clean)
            rows.append({"name": f"wild music mask: {name}, WER under bed / clean "
                                 f"({clean:.4f}; {form.seconds / 60:.1f} min)",
                         "ours": got, "goal": "<= 1.25 each"})
            print(rows[-1], flush=True)
        for name, x in (("clean", form.audio),
                        ("5 dB", under(form.audio, form.spans, bed_track(form.audio.size), 5))):
            t0 = time.process_time()
            separate(x, net, 0.75)
            cpu = time.process_time() - t0
            rows.append({"name": f"wild music mask: cost, {name}", "unit": "CPU s per audio hour",
                         "ours": round(cpu / (x.size / SR) * 3600, 1),
                         "goal": "inside asr's 144 (outside the model)"})
            print(rows[-1], flush=True)
    return rows


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", type=Path, default=WEIGHTS)
    ap.add_argument("--no-baseline", action="store_true")
    a = ap.parse_args()
    mask_rows(bool(os.environ.get("QUICK")), a.model, not a.no_baseline)
