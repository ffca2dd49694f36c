"""Word timestamps (docs/asr.md): their accuracy against words with known times, and their cost on
the asr stage side by side (same files, word timestamps off then on).

Utterances are built from single-word espeak renderings, each trimmed to where its sound starts
and ends (1 % of its peak), placed at known offsets with pauses of 0.05-0.4 s (two voices
alternate between utterances). The real asr stage (``transcribe_file``: VAD, clips, language ID,
batched Whisper) transcribes each; recognised words are matched to the known ones by text
(difflib on normalised words), and each match's start and end compared.

``--librivox``: connected speech instead, pocketsphinx-testdata's five LibriVox lines, the
reference times from pocketsphinx's own en-us forced alignment of their transcripts
(``pip install pocketsphinx``). ``--no-snap``: Whisper's times as they are, without moving
word edges off pauses (services/asr/words.py).

    python -m bench.word_times [--utterances 12] [--snr 20] [--librivox] [--no-snap] [--no-cost]
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np

from fixtures.word_times import SR, errors, librivox, utterances


def _stage(model: str, words: bool):
    from services.asr.settings import AsrSettings
    from services.asr.stage import AsrStage

    cache = os.environ.get("ONSEI_TEST_MODEL_CACHE", str(Path.home() / ".cache/onsei/models"))
    s = AsrSettings(asr_model=model, model_cache=cache, asr_device="cpu",
                    asr_compute_type="int8", asr_word_timestamps=words, asr_languages=["en"])
    st = AsrStage(s)
    st.load()
    return st


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--utterances", type=int, default=12)
    ap.add_argument("--model", default="bundled:whisper-base")
    ap.add_argument("--snr", type=float, default=None, help="white noise at this SNR (dB)")
    ap.add_argument("--no-cost", action="store_true", help="accuracy only (word times on)")
    ap.add_argument("--librivox", action="store_true")
    ap.add_argument("--no-snap", action="store_true")
    a = ap.parse_args()
    if a.no_snap:
        import services.asr.words as w

        w.snapped = lambda words, audio, clip: words
    utts = librivox() if a.librivox else utterances(a.utterances, snr=a.snr)
    audio_s = sum(x.size for x, _ in utts) / SR
    cpu = {}
    lines = {}
    for words in (True,) if a.no_cost else (False, True, False, True):  # interleaved
        st = _stage(a.model, words)
        st.transcribe_file("warm", utts[0][0])
        t0 = time.process_time()
        lines[words] = [st.transcribe_file(f"u{i}", x).line for i, (x, _) in enumerate(utts)]
        cpu.setdefault(words, []).append(time.process_time() - t0)
    errs = [e for line, (_, truth) in zip(lines[True], utts) for e in errors(line, truth)]
    n_true = sum(len(t) for _, t in utts)
    start = np.abs([e[0] for e in errs])
    end = np.abs([e[1] for e in errs])
    signed = np.array([e[0] for e in errs])
    trims = [(s.start, s.end) for line in lines[True] for s in line.segments]
    print(json.dumps({
        "utterances": len(utts), "audio_s": round(audio_s, 1), "words_known": n_true,
        "words_matched": len(errs),
        "start_abs_err_s": {"median": round(float(np.median(start)), 3),
                            "mean": round(float(start.mean()), 3),
                            "p90": round(float(np.percentile(start, 90)), 3)},
        "start_signed_err_median_s": round(float(np.median(signed)), 3),
        "end_abs_err_s": {"median": round(float(np.median(end)), 3),
                          "p90": round(float(np.percentile(end, 90)), 3)},
        "first_word_start_abs_err_s": round(float(np.median(
            [abs(errors(li, t)[0][0]) for li, (_, t) in zip(lines[True], utts)
             if errors(li, t)])), 3),
        "segments": len(trims),
        "snr": a.snr, "data": "librivox" if a.librivox else "espeak words",
        "snap": not a.no_snap,
        **({} if a.no_cost else {
            "cpu_s_off": [round(x, 2) for x in cpu[False]],
            "cpu_s_on": [round(x, 2) for x in cpu[True]],
            "cost_ratio": round(min(cpu[True]) / min(cpu[False]), 3)}),
    }))


if __name__ == "__main__":
    main()
