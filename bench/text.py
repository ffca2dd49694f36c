"""The spoken text forms (services/text, docs/text.md): sentence-exact rate of ``text_spoken``
on sentences with known spoken forms (bench/text_cases.py), mora error rate of the Japanese
reading, the English fast path against the full normaliser, and the CPU they cost per audio
hour (docs/operations.md: asr has 144 CPU s per audio hour outside the model).

``python -m bench --only text --json``; ``python -m bench.text`` prints the misses too."""

from __future__ import annotations

import re
import time
from collections import Counter

from bench.text_cases import english, japanese

SEGMENTS_PER_HOUR = 600  # kept segments of 6 s on average (asr's are 1-30 s)
PLAIN_EN = [
    "I went to the market this morning and bought some bread.",
    "She said that the weather would be nice for the rest of the week.",
    "We should probably talk about this before the meeting starts.",
    "Honestly, I didn't expect the film to be that good.",
    "They're moving to a new house near the river next spring.",
    "Could you tell me where the station is, please?",
    "It's not what you said, it's how you said it.",
    "The children were playing in the garden until it got dark.",
    "He's been working on that project for a very long time.",
    "Let me know when you're ready to leave.",
]
_WORD_PUNCT = re.compile(r"[^\w\s']")


def canon(text: str) -> str:
    """A spoken sentence compared by its words: case, hyphens and punctuation left out."""
    return " ".join(_WORD_PUNCT.sub(" ", text.lower().replace("-", " ")).split())


def _ja_canon(text: str) -> str:
    return re.sub(r"[\s、。，．,.!?！？]", "", text)


def _long_vowels(kana: str) -> list[str]:
    """Morae, the spellings of a long vowel made one (トウ and トー, セイ and セー), ヲ as オ."""
    from services.text.japanese import morae

    o_row, e_row = set("オコゴソゾトドノホボポモヨロョ"), set("エケゲセゼテデネヘベペメレ")
    out: list[str] = []
    for m in morae(kana.replace("ヲ", "オ").replace("、", "")):
        prev = out[-1][-1] if out else ""
        if (m == "ウ" and prev in o_row) or (m == "イ" and prev in e_row):
            m = "ー"
        out.append(m)
    return out


def _edits(a: list[str], b: list[str]) -> int:
    row = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        prev, row[0] = row[0], i
        for j, y in enumerate(b, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (x != y))
    return row[-1]


def measure() -> dict:
    from services.text.forms import text_forms

    en, ja = english(), japanese()
    out: dict = {"en_miss": [], "ja_miss": [], "by_kind": Counter(), "kinds": Counter()}
    text_forms("warm up 1", "en"), text_forms("暖機1", "ja")
    t = time.process_time()
    en_ok = 0
    for kind, written, right in en:
        got = text_forms(written, "en").text_spoken or ""
        hit = canon(got) in {canon(r) for r in right}
        en_ok += hit
        out["kinds"]["en " + kind] += 1
        out["by_kind"]["en " + kind] += hit
        if not hit:
            out["en_miss"].append((written, got, right[0]))
    en_cpu = time.process_time() - t
    t = time.process_time()
    ja_ok = errors = total = 0
    for kind, written, spoken, reading in ja:
        f = text_forms(written, "ja")
        hit = _ja_canon(f.text_spoken or "") == _ja_canon(spoken)
        ja_ok += hit
        out["kinds"]["ja " + kind] += 1
        out["by_kind"]["ja " + kind] += hit
        if not hit:
            out["ja_miss"].append((written, f.text_spoken, spoken))
        ref = _long_vowels(reading)
        errors += _edits(_long_vowels(f.reading or ""), ref)
        total += len(ref)
    ja_cpu = time.process_time() - t
    t = time.process_time()
    for s in PLAIN_EN:
        text_forms(s, "en")
    plain_cpu = time.process_time() - t
    from services.text.english import EnglishSpoken

    full = EnglishSpoken()
    agree = sum(full._normalizer.normalize(s).replace(" ,", ",") == s for s in PLAIN_EN)
    out.update(en=(en_ok, len(en)), ja=(ja_ok, len(ja)), mora=(errors, total),
               en_cpu=en_cpu / len(en), ja_cpu=ja_cpu / len(ja),
               plain_cpu=plain_cpu / len(PLAIN_EN), plain_agree=(agree, len(PLAIN_EN)))
    return out


def rows(quick: bool) -> list[dict]:
    m = measure()
    (eo, en), (jo, jn), (me, mt) = m["en"], m["ja"], m["mora"]
    hour = SEGMENTS_PER_HOUR
    r = [{"name": f"text: English text_spoken sentence-exact ({en} sentences, every kind)",
          "ours": round(eo / en, 3), "baseline": None, "ratio": None, "goal": ">= 0.9",
          "unit": "share"},
         {"name": f"text: Japanese text_spoken sentence-exact ({jn} sentences, every kind)",
          "ours": round(jo / jn, 3), "baseline": None, "ratio": None, "goal": ">= 0.9",
          "unit": "share"},
         {"name": f"text: Japanese reading mora error rate ({jn} sentences, {mt} morae)",
          "ours": round(me / mt, 4), "baseline": None, "ratio": None, "goal": "<= 0.03",
          "unit": "rate"},
         {"name": "text: English plain sentences, the full normaliser leaves them as they are "
                  "(what the fast path assumes)", "ours": m["plain_agree"][0],
          "baseline": m["plain_agree"][1], "ratio": None, "goal": "ours == baseline",
          "unit": "sentences"}]
    for lang, cpu in (("English, every segment with numbers", m["en_cpu"]),
                      ("English, plain segments", m["plain_cpu"]),
                      ("Japanese, every segment with numbers", m["ja_cpu"])):
        r.append({"name": f"text: CPU per audio hour, {lang} ({hour} segments/h)",
                  "ours": round(cpu * hour, 1), "baseline": 144.0,
                  "ratio": round(cpu * hour / 144.0, 3),
                  "goal": "< asr's 144 s/h outside the model, with the rest", "unit": "CPU s"})
    for kind in sorted(m["kinds"]):
        r.append({"name": f"text: sentence-exact, {kind}", "ours": m["by_kind"][kind],
                  "baseline": m["kinds"][kind], "ratio": None, "goal": "info",
                  "unit": "sentences"})
    return r


def _wer(got: str, ref: str) -> tuple[int, int]:
    r = canon(ref).split()
    return _edits(canon(got).split(), r), len(r)


def speech(quick: bool) -> list[dict]:
    """English speech synthesised (espeak-ng) from the spoken forms, transcribed by the asr
    stage (Whisper base): WER of ``text_spoken`` against the spoken form vs WER of ``text``
    against the written sentence (Whisper writes "$25" for "twenty five dollars")."""
    from bench.text_cases import EN_EXPRESSIONS, EN_FRAMES
    from bench.word_times import _stage
    from fixtures.speechgen import have_espeak, synth

    if not have_espeak():
        return []
    import numpy as np

    st = _stage("bundled:whisper-base", False)
    exprs = EN_EXPRESSIONS[::3] if quick else EN_EXPRESSIONS
    refs = [EN_FRAMES[i % len(EN_FRAMES)].format(spoken.split("|")[0])
            for i, (_, _, spoken) in enumerate(exprs)]
    written = [EN_FRAMES[i % len(EN_FRAMES)].format(w) for i, (_, w, _) in enumerate(exprs)]
    gap = np.zeros(16000, np.float32)  # one file: language ID needs more than one sentence
    audio = np.concatenate([x for r in refs for x in (synth(r, voice="en-us"), gap)])
    line = with_forms_of(st.transcribe_file("text", audio).line, st)
    kept = [x for x in line.segments if x.kept]
    spoken_err, spoken_n = _wer(" ".join(x.text_spoken or "" for x in kept), " ".join(refs))
    written_err, written_n = _wer(" ".join(x.text for x in kept), " ".join(written))
    ours, base = spoken_err / spoken_n, written_err / written_n
    return [{"name": f"text: WER on espeak-ng speech of {len(exprs)} English spoken forms "
                     "(Whisper base): text_spoken vs spoken form (ours), text vs written "
                     "sentence (baseline)", "ours": round(ours, 3), "baseline": round(base, 3),
             "ratio": round(ours / base, 3) if base else None, "goal": "ours <= baseline",
             "unit": "WER"}]


def with_forms_of(line, st):
    """The line as the stage writes it: its kept segments with their forms."""
    from services.text.forms import with_forms

    return with_forms(line, st._text)


ROWS = [rows, speech]

if __name__ == "__main__":
    res = measure()
    for miss in res["en_miss"] + res["ja_miss"]:
        print(miss)
    for row in rows(False):
        print(row["name"], row["ours"], row["baseline"])
