"""ASR stage vs faster-whisper's ``BatchedInferencePipeline`` as a user runs it (its shipped
defaults: beam 5, its temperature list, Silero VAD, its language ID first; a file in another
language is dropped; word timestamps when the stage gives them, as it does by default), each
side a process of its own (bench/asr_peer.py, bench/asr_side.py) on held-out long-form sets
(bench/asr_sets.py). The sets below are the ones bench/asr_calls.py profiles.

Sets: synthetic (espeak-ng, two voices, random 0.3-2 s pauses: English, Japanese, and a share
of Spanish / German files that both must drop) and real (pocketsphinx-testdata's LibriVox and
card-reading clips joined with pauses; fillets-ng-data's recorded German lines as the share to
drop); telephone band: the real set resampled to 8 kHz and back. Both sides get the same
decoded 16 kHz arrays; rounds alternate which goes first and
the wall times are medians over rounds (the machine is shared). Goals: wall <= 0.9x, WER and
Japanese CER <= 1.0x.
The hard sets (fixtures/hard_speech.py) run once more at both sides' defaults.
Model: ``ONSEI_ASR_MODEL`` if set, else ``bundled:whisper-base`` (offline).
"""

from __future__ import annotations

import os
from pathlib import Path

from fixtures.longform import (
    LongForm,
    make_longform,
    real_english,
    real_german,
    real_longform,
    telephone_band,
)


def _settings(tmp: Path):
    from services.asr.settings import AsrSettings

    return AsrSettings(asr_model=os.environ.get("ONSEI_ASR_MODEL", "bundled:whisper-base"),
                    input_url=str(tmp / "raw"), output_url=str(tmp / "out"),
                    scratch_dir=str(tmp / "scratch"))


def synthetic_set(quick: bool) -> list[LongForm]:
    secs = 60.0 if quick else 180.0
    n = 10 if quick else 30
    return [make_longform("en", secs, n, seed=0), make_longform("ja", secs, n, seed=0),
            make_longform("en", secs, n, seed=1), make_longform("es", secs, n, seed=0),
            make_longform("de", secs, n // 3, seed=0)][:3 if quick else 5]


def real_set(quick: bool) -> list[LongForm]:
    en = real_english()
    if not en:
        return []
    secs = 60.0 if quick else 180.0
    de = [("", a) for a in real_german()]
    files = [real_longform(en, secs, seed=0), real_longform(en, secs, seed=1)]
    if de:
        files.append(real_longform(de, secs, seed=0, language="de"))
    return files[:2] if quick else files


def telephone(files: list[LongForm]) -> list[LongForm]:
    """``files`` as a telephone line carries them (fixtures/longform.py)."""
    return [telephone_band(f) for f in files]


def stage_vs_peer(quick: bool) -> list[dict]:
    """The stage against the peer as shipped, whole process, on the held-out sets
    (bench/asr_peer.py): at both sides' defaults, and both at beam 1 (labelled)."""
    from bench.asr_peer import run

    return run("held", quick, 2 if quick else 3)


def hard_sets(quick: bool) -> list[dict]:
    """The hard sets (fixtures/hard_speech.py: fast, 8 kHz, quiet, clipped, short, under music,
    fast Japanese), both sides at their defaults, one round: an error row per set and metric
    with its per-file table."""
    from bench.asr_peer import CONFIGS, run

    return run("hard", quick, 1, CONFIGS[:1])


ROWS = [stage_vs_peer, hard_sets]
