"""English spoken form: WeTextProcessing's English text normaliser (its FSTs ship compiled in the
wheel, so building it is a 5 s load, not a grammar compilation).

The normaliser costs ~0.1-0.5 s a sentence, most of it composing the whole sentence with its
tagger. A sentence it cannot change is not given to it: one with no digit, no symbol and no
token of the normaliser's own whitelists ("Dr." -> "doctor", "~" -> "approximately") nor
initials or a state code comes back unchanged, so skipping it changes nothing but the cost (the
bench checks this on plain sentences).

Its cost grows faster than the text, so a long text goes in sentence-sized pieces, a word
past any number's length is refused, and the segment's time is bounded (services/text/bounds.py).
"""

from __future__ import annotations

import re
from functools import cached_property
from importlib import metadata
from pathlib import Path
from typing import Any

from services.text import bounds
from services.text.bounds import MAX_WORD, PIECE, TextTooCostly, check

NAME = "WeTextProcessing"
PACKAGE = "WeTextProcessing"
# the characters that leave a sentence unchanged: letters, spaces and the punctuation of prose
_PLAIN = re.compile(r"[A-Za-z\s'’\-,.?!;:\"“”()]*")
# the whitelists its tagger is built from (rules/whitelist.py), and its other patterns that
# plain letters match: initials ("U.S.A." -> "USA") and a state after a comma ("Boston, MA")
_WHITELISTS = ("tts.tsv", "symbol.tsv", "alternatives.tsv")
_LETTER_PATTERNS = re.compile(r"[A-Z](?:\. ?[A-Z]){2,}|, ?[A-Z]{2}\b")
_SPACE_BEFORE = re.compile(r"\s+([,.?!;:])")  # the verbaliser writes "january , twenty"
_SENTENCE_END = re.compile(r"(?<=[.?!;])\s+")


def pieces(text: str, size: int = PIECE) -> list[str]:
    """``text`` as pieces of at most ``size`` characters: whole sentences packed together,
    a longer sentence cut between words (one piece: ``text`` itself when it is short)."""
    out: list[str] = []
    for sentence in _SENTENCE_END.split(text):
        words = [sentence] if len(sentence) <= size else sentence.split()
        for w in words:
            if out and len(out[-1]) + 1 + len(w) <= size:
                out[-1] += " " + w
            else:
                out.append(w)
    return out


def _shipped() -> Any:
    """The normaliser from the FSTs its wheel ships, read as they are, in its base class: its
    own constructor optimises them again after reading (4-5 s of a 6 s load), though they were
    written optimised, and importing it builds every rule's grammar (2.4 s); the same rewrites
    either way (tests/services/text). Its constructor when the files are not where it writes
    them."""
    import tn
    from pynini import Fst
    from tn.processor import Processor

    folder = Path(str(tn.__file__)).parent
    tagger, verbalizer = (folder / f"en_tn_{k}.fst" for k in ("tagger", "verbalizer"))
    if not (tagger.is_file() and verbalizer.is_file()):
        from tn.english.normalizer import Normalizer

        return Normalizer()
    norm = Processor(name="en_normalizer", ordertype="en_tn")
    norm.tagger, norm.verbalizer = Fst.read(str(tagger)), Fst.read(str(verbalizer))
    return norm


class EnglishSpoken:
    """One per process (:func:`services.text.forms.normaliser`): the FST load is the cost."""

    name = NAME

    @cached_property
    def version(self) -> str:
        return metadata.version(PACKAGE)

    @cached_property
    def _normalizer(self) -> Any:  # tn.english.normalizer.Normalizer (untyped)
        import logging

        # its own logger says "found existing fst" at INFO on every load
        logging.getLogger("wetext").setLevel(logging.WARNING)
        return _shipped()

    @cached_property
    def _whitelist(self) -> frozenset[str]:
        import tn

        base = Path(tn.__file__).parent / "english" / "data" / "whitelist"
        keys: set[str] = set()
        for tsv in (base / name for name in _WHITELISTS):
            for row in tsv.read_text(encoding="utf-8").splitlines():
                key = row.split("\t", 1)[0].strip()
                if key:
                    keys.add(key)
        return frozenset(keys)

    def changes(self, text: str) -> bool:
        """Whether the normaliser may change ``text`` (False: it returns it as it is)."""
        if not _PLAIN.fullmatch(text) or _LETTER_PATTERNS.search(text):
            return True
        words = text.split()
        wl = self._whitelist
        return any(w in wl or w.rstrip(",;:?!") in wl for w in words) or any(
            " ".join(words[i:i + n]) in wl for n in (2, 3) for i in range(len(words)))

    def spoken(self, text: str, seconds: float | None = None) -> str:
        """``text`` as spoken; :class:`TextTooCostly` past a bound (a word longer than any
        number, more than ``seconds`` spent, checked between pieces; the FSTs' load is not
        counted)."""
        if not text.strip() or not self.changes(text):
            return text
        long = max(text.split(), key=len)
        if len(long) > MAX_WORD:
            raise TextTooCostly(f"a word of {len(long)} characters (at most {MAX_WORD})")
        normalizer = self._normalizer  # loaded (once per process) before the clock starts
        deadline = None if seconds is None else bounds.deadline(seconds)
        out = []
        for piece in pieces(text):
            check(deadline)
            out.append(normalizer.normalize(piece) if self.changes(piece) else piece)
        check(deadline)
        return _SPACE_BEFORE.sub(r"\1", " ".join(out)).strip()
