"""Character error rate between two transcripts, after the normalisation both sides need.

Case, width (NFKC), punctuation, symbols and spaces are ignored: Whisper punctuates and spaces
differently from run to run, and Japanese has no spaces at all, so characters are the unit.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence


def normalize(text: str) -> str:
    t = unicodedata.normalize("NFKC", text).casefold()
    return "".join(c for c in t if unicodedata.category(c)[0] not in "PSZC")


def edit_distance(a: Sequence[object], b: Sequence[object]) -> int:
    """Levenshtein distance (insertions, deletions, substitutions), O(len(a) * len(b)), over
    characters or words."""
    if len(a) < len(b):
        a, b = b, a
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1]


def cer(reference: str, hypothesis: str) -> float:
    """Edits / reference characters (normalised); 0 when both are empty, 1 when only ref is."""
    ref, hyp = normalize(reference), normalize(hypothesis)
    if not ref:
        return 0.0 if not hyp else 1.0
    return edit_distance(ref, hyp) / len(ref)
