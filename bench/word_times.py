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
import difflib
import json
import os
import re
import time
from pathlib import Path

import numpy as np

SR = 16000


def _norm(w: str) -> str:
    return re.sub(r"[^a-z0-9']", "", w.lower())


def _trim(x: np.ndarray) -> np.ndarray:
    loud = np.flatnonzero(np.abs(x) >= 0.01 * np.abs(x).max())
    return x[loud[0]:loud[-1] + 1]


def utterances(n: int, seed: int = 0, snr: float | None = None
               ) -> list[tuple[np.ndarray, list[tuple[str, float, float]]]]:
    """``n`` utterances of words rendered alone at known (start, end); white noise at ``snr``
    dB over the whole utterance when given."""
    from bench.speech_corpus import EN_SENTENCES
    from bench.speechgen import synth

    rng = np.random.default_rng(seed)
    cache: dict[tuple[str, str], np.ndarray] = {}
    out = []
    for u in range(n):
        words = [w for w in EN_SENTENCES[u % len(EN_SENTENCES)].split() if _norm(w)]
        voice = ("en", "en+f3")[u % 2]
        parts, truth, t = [np.zeros(SR // 2, np.float32)], [], 0.5
        for w in words:
            key = (_norm(w), voice)
            if key not in cache:
                cache[key] = _trim(synth(key[0], voice=voice))
            x = cache[key]
            truth.append((key[0], t, t + x.size / SR))
            gap = np.zeros(int(rng.uniform(0.05, 0.4) * SR), np.float32)
            parts += [0.5 * x / np.abs(x).max(), gap]
            t += (x.size + gap.size) / SR
        parts.append(np.zeros(SR // 2, np.float32))
        x = np.concatenate(parts).astype(np.float32)
        if snr is not None:
            from bench.speechgen import add_noise

            x = add_noise(x, snr, u)
        out.append((x, truth))
    return out


def librivox() -> list[tuple[np.ndarray, list[tuple[str, float, float]]]]:
    """The LibriVox lines with pocketsphinx's forced alignment of their transcripts."""
    from pocketsphinx import Decoder

    from bench.known_speakers import sphinx_lines, sphinx_texts

    lines, texts = sphinx_lines()["librivox"], sphinx_texts()["librivox"]
    out = []
    for x, text in zip(lines, texts):
        dec = Decoder(samprate=SR)
        dec.set_align_text(text.lower())
        dec.start_utt()
        dec.process_raw((np.clip(x, -1, 1) * 32767).astype(np.int16).tobytes(), full_utt=True)
        dec.end_utt()
        truth = [(_norm(s.word.split("(")[0]), s.start_frame / 100, (s.end_frame + 1) / 100)
                 for s in dec.seg() if not s.word.startswith(("<", "["))]
        out.append((x, truth))
    return out


def _stage(model: str, words: bool):
    from services.asr.settings import AsrSettings
    from services.asr.stage import AsrStage

    cache = os.environ.get("ONSEI_TEST_MODEL_CACHE", str(Path.home() / ".cache/onsei/models"))
    s = AsrSettings(asr_model=model, model_cache=cache, asr_device="cpu",
                    asr_compute_type="int8", asr_word_timestamps=words, languages=["en"])
    st = AsrStage(s)
    st.load()
    return st


def errors(line, truth: list[tuple[str, float, float]]) -> list[tuple[float, float]]:
    got = [(_norm(w.word), w.start, w.end) for s in line.segments if s.kept
           for w in (s.words or [])]
    sm = difflib.SequenceMatcher(a=[g[0] for g in got], b=[t[0] for t in truth], autojunk=False)
    out = []
    for a, b, size in sm.get_matching_blocks():
        for k in range(size):
            g, t = got[a + k], truth[b + k]
            out.append((g[1] - t[1], g[2] - t[2]))
    return out


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
