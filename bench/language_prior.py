"""Rules for short lone clips judged on bench/language_context.py's dump, both ways, by half.

Each rule decides, for every set of languages asked for (language_short.KEPT_SETS), whether a
short clip is kept; rows count target pairs dropped and non-target pairs kept, real and
synthetic, under 2 s and 2-4 s, as language_short does.

- ``as is``: the stage's rule (``langid.kept_language``) on the clip;
- ``tile N``: the same rule on the clip's speech tiled to N s;
- ``shard floor F``: the clip in a shard with its voice's long files: where the long files the
  stage is sure of (top language at the stage's threshold) are at least :data:`HOMOGENEOUS` of one
  language ``h`` (and there are :data:`MIN_SURE` of them), a short clip the rule drops is kept
  when ``h`` is asked for and the clip gives ``h`` at least F. Shards: ``voice`` (one voice's
  long and short files: a language-homogeneous source), ``mixed`` (every voice's files in one
  shard), ``intruded`` (one voice's files with every other language's short clips among them:
  a foreign clip in a homogeneous source, the case a prior cannot see).

``python -m bench.language_prior DUMP [tune|held]``.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any

from bench.language_short import KEPT_SETS, SHORT

HOMOGENEOUS = 0.9
MIN_SURE = 3
SURE = 0.8  # a long file this sure of its top language tells the shard's (Whisper base gives
# espeak-ng's Dutch 0.49-0.55 English: a shard must not take its language from such files)
THRESHOLD = 0.5  # the stage's asr_language_threshold
FLOORS = (1.01, 0.2, 0.1, 0.05, 0.02, 0.01)  # 1.01: never rescued (the rule as is)


def keeps(x: dict[str, Any], kept: list[str]) -> bool:
    from services.asr.langid import LanguageGuess, kept_language

    if x["shares"] is None:
        return False
    lang = max(x["shares"], key=lambda k: x["shares"][k])
    guess = LanguageGuess(lang, x["shares"][lang], len(x["dists"]), x["shares"])
    return kept_language(guess, x["dists"], kept, THRESHOLD) is not None


def shard_language(longs: list[dict[str, Any]]) -> str | None:
    """The language of a shard's files the stage is sure of, when they agree."""
    sure = [max(x["shares"], key=lambda k: x["shares"][k]) for x in longs
            if x["shares"] and max(x["shares"].values()) >= SURE]
    if len(sure) < MIN_SURE:
        return None
    top = max(set(sure), key=sure.count)
    return top if sure.count(top) >= HOMOGENEOUS * len(sure) else None


Rule = Callable[[dict[str, Any], list[str], str | None], bool]


def floor_rule(floor: float) -> Rule:
    def rule(x: dict[str, Any], kept: list[str], h: str | None) -> bool:
        if keeps(x, kept):
            return True
        return h is not None and h in kept and (x["shares"] or {}).get(h, 0.0) >= floor
    return rule


def tally(pairs: list[tuple[dict[str, Any], str | None]], rule: Rule,
          ) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for kept in KEPT_SETS.values():
        for x, h in pairs:
            key = (f"{'real' if x['real'] else 'synthetic'} "
                   f"{'< 2 s' if x['seconds'] < SHORT else '2-4 s'}")
            c = out.setdefault(key, [0, 0, 0, 0])
            k = rule(x, kept, h)
            if x["language"] in kept:
                c[0] += not k
                c[1] += 1
            else:
                c[2] += k
                c[3] += 1
    return out


def source(x: dict[str, Any]) -> str:
    return x["name"].split(".")[1]  # the voice: en, fr, ..., espeak-de


def shards(dump: list[dict[str, Any]], half: str, variant: str = "short",
           ) -> dict[str, list[tuple[dict[str, Any], str | None]]]:
    """(short clip, its shard's language) for each way of building shards."""
    short = [x for x in dump if x["half"] == half and x["variant"] == variant]
    longs = [x for x in dump if x["half"] == half and x["variant"] == "long"]
    by_src = {s: shard_language([x for x in longs if source(x) == s])
              for s in {source(x) for x in dump}}
    mixed = shard_language(longs)
    out: dict[str, list[tuple[dict[str, Any], str | None]]] = {
        "voice": [(x, by_src[source(x)]) for x in short],
        "mixed": [(x, mixed) for x in short],
        "intruded": []}
    # each source's shard, every other language's clips in it
    for s, h in sorted(by_src.items(), key=lambda kv: kv[0]):
        lang = next(x["language"] for x in dump if source(x) == s)
        out["intruded"] += [(x, h) for x in short if x["language"] != lang]
    return out


def show(name: str, t: dict[str, list[int]]) -> None:
    cells = []
    for key in sorted(t):
        d, n, k, m = t[key]
        cells.append(f"{key}: drop {d}/{n} ({d / max(n, 1):.1%}) "
                     f"keep {k}/{m} ({k / max(m, 1):.1%})")
    print(f"{name:28s} | " + " | ".join(cells))


def main(path: str, half: str, floors: tuple[float, ...] = FLOORS) -> None:
    from pathlib import Path

    dump = json.loads(Path(path).read_text())

    def none(x: dict[str, Any], kept: list[str], h: str | None) -> bool:
        return keeps(x, kept)

    variants = sorted({x["variant"] for x in dump if x["variant"].startswith("tile")})
    for v in ["short", *variants]:
        pairs = shards(dump, half, v)["voice"]
        show(f"{v}: as is", tally(pairs, none))
    for how, pairs in shards(dump, half).items():
        print(f"-- shards: {how}; shard languages: "
              f"{sorted({str(h) for _, h in pairs})}")
        for floor in floors:
            show(f"{how}: floor {floor}", tally(pairs, floor_rule(floor)))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "tune",
         tuple(float(f) for f in sys.argv[3].split(",")) if len(sys.argv) > 3 else FLOORS)
