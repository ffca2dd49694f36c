"""Text and segments a TTS trainer can use (services/asr/punctuation.py, sentences.py).

Rows: sentence boundaries punctuated on multi-sentence espeak-ng files, with the punctuated
prompt (ours) and without (baseline); on held-out long-form files (espeak-ng in two voices,
recorded LibriVox and card readings), kept segments cut at sentence ends to the target
(ours) against the clips uncut (baseline): the share ending at a sentence end, their length
distribution against the target, and the error rate of their text (prompt and cut vs neither).

``python -m bench --only segments --json``."""

from __future__ import annotations

import random
from contextlib import contextmanager
from typing import Any

import numpy as np

SR = 16000
ENDS = tuple(".?!。？！")


@contextmanager
def _no_prompt():
    from services.asr import punctuation

    saved = dict(punctuation.PROMPTS)
    punctuation.PROMPTS.clear()
    try:
        yield
    finally:
        punctuation.PROMPTS.update(saved)


def _stage():
    from bench.word_times import _stage as stage

    st = stage("bundled:whisper-base", True)
    st.settings = st.settings.model_copy(update={"asr_languages": ["ja", "en"]})
    return st


def _files(language: str, n: int) -> list[Any]:
    """``n`` files of 3-5 sentences in one voice with one pause length (0.6-2 s) each."""
    from fixtures.longform import EN_LONG, JA_PAIRS, LongForm, _say

    out = []
    for seed in range(n):
        rng = random.Random(f"{language}{seed}")
        pause = rng.choice([0.6, 0.9, 1.2, 1.6, 2.0])
        k = rng.choice([3, 4, 5])
        items = [(s, s) for s in rng.sample(EN_LONG, k)] if language == "en" \
            else rng.sample(JA_PAIRS, k)
        voice = rng.choice(["en-us", "en-gb", "en-us+f3"] if language == "en" else ["ja", "ja+f3"])
        t = rng.uniform(0.1, 0.6)
        parts = [np.zeros(int(t * SR), np.float32)]
        f = LongForm(language, parts[0])
        for ref, spoken in items:
            a = _say(spoken, voice, language)
            f.sentences.append(ref)
            f.spans.append((t, t + a.size / SR))
            parts += [a, np.zeros(int(pause * SR), np.float32)]
            t += a.size / SR + pause
        f.audio = np.concatenate(parts)
        out.append(f)
    return out


def _punctuated(form: Any, line: Any) -> tuple[int, int]:
    """Boundaries between the file's sentences whose last word (the last one ending in the
    sentence or the pause after it) ends in sentence punctuation; and how many there are."""
    words = [w for s in line.segments if s.kept for w in (s.words or [])]
    hit = 0
    for k, (a, _) in enumerate(form.spans[:-1]):
        inside = [w for w in words if a - 0.3 < w.end < form.spans[k + 1][0]]
        hit += bool(inside) and max(inside, key=lambda w: w.end).word.strip().endswith(ENDS)
    return hit, len(form.spans) - 1


def punctuation(quick: bool) -> list[dict]:
    from fixtures.speechgen import have_espeak

    if not have_espeak():
        return []
    st = _stage()
    rows = []
    for language in ("en", "ja"):
        files = _files(language, 8 if quick else 30)
        got = []
        for prompt in (True, False):
            hit = total = 0
            for f in files:
                if prompt:
                    line = st.transcribe_file(language, f.audio).line
                else:
                    with _no_prompt():
                        line = st.transcribe_file(language, f.audio).line
                h, n = _punctuated(f, line)
                hit, total = hit + h, total + n
            got.append(hit / max(1, total))
        rows.append({"name": f"segments: sentence boundaries punctuated, {language}, {len(files)} "
                             f"files of 3-5 espeak-ng sentences ({total} boundaries; Whisper "
                             "base): punctuated prompt (ours) vs none (baseline)",
                     "ours": round(got[0], 3), "baseline": round(got[1], 3),
                     "ratio": round(got[0] / got[1], 3) if got[1] else None,
                     "goal": ">= 0.95 (en)", "unit": "share"})
    return rows


@contextmanager
def _captured(calls: list):
    """build_segments' inputs recorded as the stage calls it (the decode is then done once)."""
    from services.asr import policy

    real = policy.build_segments

    def spy(*args, **kwargs):
        calls.append((args, kwargs))
        return real(*args, **kwargs)

    policy.build_segments = spy
    try:
        yield real
    finally:
        policy.build_segments = real


def _sentence(form: Any, word: Any) -> int:
    """The reference sentence a word was spoken in: the one nearest its middle."""
    mid = (word.start + word.end) / 2
    return min(range(len(form.spans)),
               key=lambda k: max(form.spans[k][0] - mid, mid - form.spans[k][1], 0.0))


def _ends(form: Any, segs: list[Any]) -> list[bool]:
    """Whether each segment ends where a reference sentence does: its last word and the next
    word spoken (in any segment) lie in different sentences."""
    words = sorted((w for s in segs for w in s.words or ()), key=lambda w: w.start)
    out = []
    for s in segs:
        if not s.words:
            out.append(False)
            continue
        last = s.words[-1]
        after = [w for w in words if w.start >= last.end]
        out.append(not after or _sentence(form, after[0]) != _sentence(form, last))
    return out


def _forms(quick: bool) -> list[tuple[str, Any]]:
    from fixtures.longform import make_longform, real_english, real_longform

    seconds = 90.0 if quick else 180.0
    out = [("espeak en", make_longform("en", seconds=seconds, seed=1))]
    clips = real_english()
    if clips:
        out.append(("recorded en", real_longform(clips, seconds=seconds, seed=1)))
    if not quick:
        out.append(("espeak ja", make_longform("ja", seconds=seconds, seed=1)))
    return out


def lengths(quick: bool) -> list[dict]:
    from fixtures.longform import error_rate
    from fixtures.speechgen import have_espeak

    if not have_espeak():
        return []
    st = _stage()
    target = st.settings.asr_segment_target_seconds
    uncut = st.settings.model_copy(update={"asr_segment_target_seconds": 0.0})
    rows: list[dict] = []
    durations: dict[str, list[float]] = {"ours": [], "baseline": []}
    for name, form in _forms(quick):
        calls: list = []
        with _captured(calls) as build:
            line = st.transcribe_file(form.language, form.audio).line
        args, kwargs = calls[-1]
        whole = build(args[0], args[1], args[2], uncut, *args[4:], **kwargs)
        with _no_prompt():
            before = st.transcribe_file(form.language, form.audio).line
        ours = [s for s in line.segments if s.kept]
        base = [s for s in whole.lines if s.kept]
        j = "" if form.language == "ja" else " "
        err = [error_rate(form.language, form.reference, j.join(s.text for s in segs))
               for segs in (ours, [s for s in before.segments if s.kept])]
        at = [float(np.mean(_ends(form, segs))) if segs else 0.0 for segs in (ours, base)]
        for key, segs in (("ours", ours), ("baseline", base)):
            durations[key] += [s.end - s.start for s in segs]
        rows += [
            {"name": f"segments: {name} ({form.seconds:.0f} s), kept segments ending at a "
                     f"sentence end: cut at {target:g} s (ours, {len(ours)}) vs uncut "
                     f"(baseline, {len(base)})", "ours": round(at[0], 3),
             "baseline": round(at[1], 3), "ratio": round(at[0] / at[1], 3) if at[1] else None,
             "goal": ">= 0.9", "unit": "share"},
            {"name": f"segments: {name}, error rate of the kept text: prompt and cut (ours) vs "
                     "neither (baseline)", "ours": round(err[0], 3), "baseline": round(err[1], 3),
             "ratio": round(err[0] / err[1], 3) if err[1] else None,
             "goal": "ours <= baseline + 0.01", "unit": "WER" if j else "CER"}]
    for key in ("ours", "baseline"):
        d = np.array(durations[key] or [0.0])
        hist = np.histogram(d, bins=[0, 5, 10, 15, 20, 25, 30, 3600])[0].tolist()
        how = f"cut at {target:g} s" if key == "ours" else "uncut"
        rows.append({"name": f"segments: kept lengths, all files, {key} ({how}): "
                             f"median (ours col), share within the target (baseline col); "
                             f"per 5 s bin {hist}",
                     "ours": round(float(np.median(d)), 1),
                     "baseline": round(float(np.mean(d <= target + 0.5)), 3), "ratio": None,
                     "goal": f"median <= {target:g} s", "unit": "s / share"})
    return rows


ROWS = [punctuation, lengths]

if __name__ == "__main__":
    import json

    for fn in ROWS:
        for row in fn(False):
            print(json.dumps(row, ensure_ascii=False))
