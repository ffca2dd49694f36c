"""Hard sets for the asr stage against its peer: where greedy and beam, or two decoders, part.

Built at run time as bench/asr_sets.py builds its own (nothing committed), from a seed of their
own (never looked at while decoding values were chosen on ``dev``):

- ``fast``: espeak-ng English in seven voices at 230 words a minute (the others: 160);
- ``narrowband``: English in seven voices, resampled to 8 kHz and back (a telephone line);
- ``quiet``: English peaking at -40 dBFS (a far microphone, a low recording level);
- ``loud``: English driven 8x into clipping (a hot recording level);
- ``short``: one file per utterance of 1-2 s (a reply, a greeting), 0.5 s of silence each side;
- ``music``: English under a bed of held chords 10 dB down (a podcast's intro);
- ``ja-fast``: Japanese in three voices at 160 words a minute (scored by CER and Kana-CER).

Each file is its own row in the per-file tables (bench/asr_peer.py), so one file going from
0 to 0.4 shows under a mean that hides it.
"""

from __future__ import annotations

import random

import numpy as np

from bench.asr import telephone
from bench.asr_sets import JA_VOICES
from fixtures.longform import SR, LongForm, make_longform
from fixtures.signals import at_snr, chord_bed
from fixtures.speechgen import synth

SEED = 300
VOICES = ("en-us", "en-gb+f3", "en-gb-scotland", "en-gb-x-rp+m3", "en-029+f2", "en-us+m7",
          "en-gb-x-gbclan+f4")

# 1-2 s when spoken at 160 words a minute
SHORT = ("Thank you very much.", "Good morning, everyone.", "See you tomorrow.",
         "Please close the door.", "Where is the station?", "That sounds great.",
         "Turn left at the corner.", "It is raining again.", "Call me after lunch.",
         "How much is this?")


def _short(n: int) -> list[LongForm]:
    rng = random.Random(f"short-{SEED}")
    out = []
    for text in SHORT[:n]:
        speech = synth(text, voice=rng.choice(VOICES))
        pad = np.zeros(int(0.5 * SR), dtype=np.float32)
        out.append(LongForm("en", np.concatenate([pad, speech, pad]), [text],
                            [(0.5, 0.5 + speech.size / SR)]))
    return out


def _scaled(f: LongForm, peak: float, clip: bool = False) -> LongForm:
    audio = f.audio * (peak / max(1e-9, float(np.abs(f.audio).max())))
    if clip:
        audio = np.clip(audio, -1.0, 1.0)
    return LongForm(f.language, audio.astype(np.float32), f.sentences, f.spans)


def _music(f: LongForm) -> LongForm:
    bed = at_snr(f.audio, chord_bed(f.audio.size, seed=SEED), 10)
    return LongForm(f.language, (f.audio + bed).astype(np.float32), f.sentences, f.spans)


def build(quick: bool) -> dict[str, list[LongForm]]:
    """The hard sets by name; ``quick``: 40 s files and 6 short ones (else 90 s and 10)."""
    secs, n = (40.0, 6) if quick else (90.0, 12)

    def en(k: int, speed: int | None = None) -> LongForm:
        return make_longform("en", secs, n, seed=SEED + k, voices=VOICES, speed=speed)

    return {"fast": [en(0, 230)],
            "narrowband": telephone([en(1)]),
            "quiet": [_scaled(en(2), 0.01)],
            "loud": [_scaled(en(3), 8.0, clip=True)],
            "short": _short(6 if quick else 10),
            "music": [_music(en(4))],
            "ja-fast": [make_longform("ja", secs, n, seed=SEED, voices=JA_VOICES, speed=160)]}
