"""What trainers select on (docs/quality.md, docs/asr.md), as bench rows: speaker labels on
natural speech with known speakers, speech presence on silence and tones, word start error on
words with known times. The detail (sweeps, per-file figures) is in ``bench.speaker_labels``,
``bench.prosody`` and ``bench.word_times``, each runnable alone."""

from __future__ import annotations

import numpy as np


def speaker_labels(quick: bool) -> list[dict]:
    from bench.speaker_labels import all_files, embed, sweep
    from services.enhance.speakers import DEFAULT_THRESHOLD

    files = all_files()
    if not files:
        return []
    rows = sweep(files, embed(files), [DEFAULT_THRESHOLD])
    return [{"name": f"trainers: speaker labels, {r['group']} ({r['files']} files, "
                     f"{r['segments']} segments, threshold {DEFAULT_THRESHOLD:g}): purity vs "
                     f"wrong merges (wrong splits {r['wrong_split']})",
             "ours": r["purity"], "baseline": r["wrong_merge"], "ratio": None,
             "goal": "purity high, merges low", "unit": "share"} for r in rows]


def speech_presence(quick: bool) -> list[dict]:
    from fixtures.known_speakers import sphinx_lines
    from services.enhance.quality.prosody import speech_fraction

    t = np.arange(6 * 16000) / 16000
    other = [np.zeros(t.size, np.float32), np.sign(np.sin(2 * np.pi * 220 * t)).astype(np.float32),
             (0.5 * np.sin(2 * np.pi * 150 * t)).astype(np.float32)]
    speech = sphinx_lines().get("librivox", [])
    if not speech:
        return []
    return [{"name": "trainers: speech_fraction, LibriVox lines (min) vs silence / square / "
                     "sine (max)",
             "ours": round(min(speech_fraction(x) for x in speech), 3),
             "baseline": round(max(speech_fraction(x) for x in other), 3), "ratio": None,
             "goal": "ours > 0.1 > baseline", "unit": "fraction"}]


def word_starts(quick: bool) -> list[dict]:
    from bench.word_times import _stage, errors, utterances

    utts = utterances(3 if quick else 12)
    st = _stage("bundled:whisper-base", True)
    errs = [e for i, (x, truth) in enumerate(utts)
            for e in errors(st.transcribe_file(f"u{i}", x).line, truth)]
    if not errs:
        return []
    return [{"name": f"trainers: word start error, espeak words at known offsets "
                     f"({len(errs)} words)",
             "ours": round(float(np.median(np.abs([e[0] for e in errs]))), 3), "baseline": None,
             "ratio": None, "goal": "median <= 0.1", "unit": "s"}]


ROWS = [speaker_labels, speech_presence, word_starts]
