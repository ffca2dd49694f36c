"""Held-tone suppression ahead of the decode (services/asr/music.py), on and off, on the same
audio: speech clean and under the music bed of bench/wild/music.py at 10 and 5 dB.

- WER of each / WER clean, with ``asr_music_suppression`` on and off (goal <= 1.25 on);
- clean WER on vs off (goal: not higher) and the 30 s blocks treated;
- its cost in CPU seconds per audio hour, clean (the gate alone) and under a bed.

``python -m bench.wild.music_suppression`` (``QUICK=1``: 2 min of speech, else 5 min), or
``python -m bench --only wild``.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from bench.wild.music import BEDS_DB, bed_track, under
from fixtures.longform import SR, LongForm, error_rate, real_english, real_longform


def _stage(tmp: Path, on: bool) -> Any:
    from services.asr.settings import AsrSettings
    from services.asr.stage import AsrStage

    stage = AsrStage(AsrSettings(
        asr_model=os.environ.get("ONSEI_ASR_MODEL", "bundled:whisper-base"),
        input_url=str(tmp / "raw"), output_url=str(tmp / "out"),
        scratch_dir=str(tmp / "scratch"), asr_music_suppression=on))
    stage.load()
    return stage


def wer_of(stage: Any, form: Any) -> Callable[[np.ndarray], float]:
    """The WER of ``stage``'s kept text on a treated copy of ``form``'s audio."""
    def wer(x: np.ndarray) -> float:
        out = stage.transcribe_file("x", x.astype(np.float32))
        return error_rate("en", form.reference,
                          " ".join(s.text for s in out.line.segments if s.kept))
    return wer


SPEECH_SETS = ("librivox", "distinct")


def bed_form(speech: str, quick: bool, seconds: float | None = None) -> LongForm:
    """The speech the bed goes under, 2 (``quick``) or 5 minutes of it, or ``seconds``:
    ``librivox``, pocketsphinx-testdata's 10 clips in shuffled rounds; ``distinct``, those and
    Asterisk's English prompts with no clip heard twice (fixtures/distinct_english.py; all of
    it is about 13.5 minutes with the pauses)."""
    seconds = seconds or (120 if quick else 300)
    if speech == "distinct":
        from fixtures.distinct_english import distinct_longform

        return distinct_longform(seconds, seed=3)
    if speech != "librivox":
        raise ValueError(f"speech set {speech!r}: one of {SPEECH_SETS}")
    return real_longform(real_english(), seconds=seconds, seed=3)


def bed_ratios(form: Any, fn: Callable[[np.ndarray], np.ndarray],
               wer: Callable[[np.ndarray], float], clean: float,
               seeds: tuple[int, ...] = (0, 1)) -> tuple[dict, float]:
    """WER under each bed (each track order of ``seeds``, each level) over ``clean``, with
    ``fn`` applied to the mix first; and ``fn``'s CPU seconds per audio hour."""
    got, cpu, secs = {}, 0.0, 0.0
    for seed in seeds:
        bed = bed_track(form.audio.size, seed)
        for db in BEDS_DB:
            x = under(form.audio, form.spans, bed, db)
            t0 = time.process_time()
            y = fn(x)
            cpu += time.process_time() - t0
            secs += x.size / SR
            got[f"seed {seed} {db} dB"] = round(wer(y) / clean, 3)
    return got, round(cpu / secs * 3600, 1)


def suppression_rows(quick: bool) -> list[dict]:
    from services.asr.music import suppress
    from services.asr.settings import AsrSettings

    form = real_longform(real_english(), seconds=120 if quick else 300, seed=3)
    bed = bed_track(form.audio.size)
    audios = {"clean": form.audio,
              **{f"{db} dB": under(form.audio, form.spans, bed, db) for db in BEDS_DB}}
    wer: dict[tuple[bool, str], float] = {}
    blocks: dict[str, int] = {}
    with tempfile.TemporaryDirectory(prefix="onsei-bench-music-sup-") as d:
        for on in (True, False):
            stage = _stage(Path(d), on)
            for name, audio in audios.items():
                out = stage.transcribe_file(name, audio)
                text = " ".join(s.text for s in out.line.segments if s.kept)
                wer[(on, name)] = error_rate("en", form.reference, text)
                if on:
                    blocks[name] = int(out.extra.get("music_blocks", 0))
    gate = AsrSettings.model_fields["asr_music_gate"].default
    rows = []
    for name in audios:
        if name == "clean":
            continue
        ratio = {on: wer[(on, name)] / wer[(on, "clean")] if wer[(on, "clean")] else None
                 for on in (True, False)}
        rows.append({"name": f"wild music suppression: WER under music at {name} / clean, on "
                             f"(baseline: off; {blocks[name]} blocks treated, "
                             f"{form.seconds / 60:.1f} min LibriVox)",
                     "ours": _round(ratio[True]), "baseline": _round(ratio[False]),
                     "ratio": None, "unit": "WER ratio", "goal": "<= 1.25"})
    rows.append({"name": f"wild music suppression: clean WER on (baseline: off; "
                         f"{blocks['clean']} blocks treated)",
                 "ours": round(wer[(True, "clean")], 4),
                 "baseline": round(wer[(False, "clean")], 4),
                 "ratio": None, "unit": "WER", "goal": "not higher"})
    for name in ("clean", f"{BEDS_DB[-1]} dB"):
        audio = audios[name]
        t0 = time.process_time()
        suppress(audio, gate)
        cpu = time.process_time() - t0
        minutes = audio.size / SR / 60
        rows.append({"name": f"wild music suppression: cost, {name} ({minutes:.1f} min)",
                     "ours": round(cpu / (audio.size / SR) * 3600, 1), "baseline": None,
                     "ratio": None, "unit": "CPU s per audio hour",
                     "goal": "inside asr's 144 (outside the model)"})
    return rows


def _round(x: float | None) -> float | None:
    return None if x is None else round(x, 3)


ROWS = [suppression_rows]

if __name__ == "__main__":
    for row in suppression_rows(bool(os.environ.get("QUICK"))):
        print(row)
