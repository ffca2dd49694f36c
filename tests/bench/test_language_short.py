"""The short-clip language bench's bookkeeping: each clip a target for the sets that ask for
its language and a non-target for the others, by the stage's own rule."""

from __future__ import annotations

from bench.language_short import KEPT_SETS, Looked, counts, rows_of
from services.asr.langid import LanguageGuess


def _clip(name: str, language: str, shares: dict[str, float], seconds: float = 1.5) -> Looked:
    top = max(shares, key=lambda k: shares[k])
    return Looked(name, language, True, "tune", seconds,
                  LanguageGuess(top, shares[top], 1, shares), [list(shares.items())])


def test_each_clip_counts_for_every_set_of_languages_asked_for() -> None:
    # Whisper base on a 2 s Italian prompt: Spanish, sure of it
    it = _clip("it", "it", {"es": 0.9, "it": 0.09, "pl": 0.01})
    asked_it = sum("it" in k for k in KEPT_SETS.values())
    got = counts([it])["real tune, < 2 s"]
    # dropped wherever Italian is asked for, and kept (as Spanish) where Spanish is
    assert got == [asked_it, asked_it, 1, len(KEPT_SETS) - asked_it]
    spanish = counts([_clip("es", "es", {"es": 0.95, "it": 0.05}, 3.0)])["real tune, 2-4 s"]
    assert spanish == [0, 1, 0, len(KEPT_SETS) - 1]  # kept where asked for, dropped elsewhere


def test_rows_carry_goal_and_whether_met() -> None:
    rows = rows_of([_clip("it", "it", {"es": 0.9, "it": 0.09, "pl": 0.01})])
    dropped = next(r for r in rows if "target clips dropped" in r["name"])
    assert dropped["goal"] == "<= 1%" and dropped["met"] is False and dropped["ours"] == 1.0
    kept = next(r for r in rows if "non-target" in r["name"])
    assert kept["ours"] == 0.25  # kept as Spanish by the one set of four asking es
