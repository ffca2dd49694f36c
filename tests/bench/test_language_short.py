"""The short-clip language bench's bookkeeping: each clip a target for the sets that ask for
its language and a non-target for the others, the second opinion counted beside the
distributions alone."""

from __future__ import annotations

from bench.language_short import KEPT_SETS, Looked, counts, rows_of
from services.asr.langid import LanguageGuess


def _clip(name: str, language: str, shares: dict[str, float], logprobs: dict[str, float],
          half: str = "tune") -> Looked:
    top = max(shares, key=lambda k: shares[k])
    return Looked(name, language, True, half, 1.5, LanguageGuess(top, shares[top], 1, shares),
                  [list(shares.items())], 1.5, True, logprobs.__getitem__)


def test_each_clip_counts_for_every_set_of_languages_asked_for() -> None:
    # Italian said Spanish by the distributions, read best in Italian by the decoder
    it = _clip("it", "it", {"es": 0.9, "it": 0.09, "pl": 0.01},
               {"es": -0.4, "it": -0.1, "pl": -2.0, "en": -1.5, "fr": -1.2, "ru": -2.0,
                "ja": -2.5, "de": -1.8})
    asked_it = sum("it" in k for k in KEPT_SETS.values())
    alone = counts([it], second=False, margin=0.15)["real tune"]
    assert alone[:2] == [asked_it, asked_it]  # dropped wherever it is asked for
    both = counts([it], second=True, margin=0.15)["real tune"]
    assert both[0] == 0 and both[1] == asked_it  # the second opinion keeps it
    assert both[3] == len(KEPT_SETS) - asked_it


def test_rows_carry_goal_and_whether_met() -> None:
    es = _clip("es", "es", {"es": 0.95, "it": 0.05}, {"es": -0.1, "it": -0.9, "en": -1.0,
                                                      "fr": -1.0, "ru": -2.0, "ja": -2.0,
                                                      "de": -1.5})
    rows = rows_of([es], 0.15)
    kept = next(r for r in rows if "non-target" in r["name"])
    assert kept["ours"] == 0.0 and kept["met"] is True
    dropped = next(r for r in rows if "target clips dropped" in r["name"])
    assert dropped["goal"] == "<= 1%" and dropped["met"] is True  # the one set asking es keeps it
