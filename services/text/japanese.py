"""Japanese: spoken form, reading and accent from one pass of OpenJTalk's front end
(pyopenjtalk-plus; its wheel ships the dictionary).

- ``text_spoken``: the text with each number written in kanji numerals as OpenJTalk reads it
  (``8200円`` -> ``八千二百円``, ``3.5`` -> ``三点五``), and each token written in neither kana
  nor kanji (``%``, ``kg``, ``AI``, ``℃``) as its katakana reading (``パーセント``); punctuation as
  written. Digits OpenJTalk keeps inside a word (``3月``) are spelled by num2words (``三月``).
- ``reading``: the katakana pronunciation (``キョーノホール…``: long vowels as ``ー``, particles as
  said: は -> ワ), a pause as ``、``.
- ``accent``: the reading cut into OpenJTalk's accent phrases, ``/`` between phrases, ``、`` at a
  pause, and ``'`` after the mora where the pitch falls (none: a flat phrase), the notation of
  AquesTalk and VOICEVOX: ``キョ'ーノ/ホ'ール/ハッセ'ン/ニヒャクエンデ'シタ``.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from importlib import metadata
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the reader loads pyopenjtalk only when it runs
    from pyopenjtalk.types import NJDFeature

NAME = "pyopenjtalk-plus"
PACKAGE = "pyopenjtalk-plus"
_JAPANESE = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff々〆ヶー]+")
_DIGITS = re.compile(r"[0-9]+")
_SMALL = set("ァィゥェォャュョヮ")
_DECIMAL_POINT = "テン"  # OpenJTalk's reading of the point inside a number


@dataclass(frozen=True)
class JapaneseForms:
    text_spoken: str
    reading: str
    accent: str


def morae(kana: str) -> list[str]:
    """Katakana cut into morae: a small kana belongs to the one before (キョ); ッ, ン, ー are
    morae of their own."""
    out: list[str] = []
    for ch in kana:
        if ch in _SMALL and out:
            out[-1] += ch
        else:
            out.append(ch)
    return out


def _pron(node: NJDFeature) -> str:
    return str(node["pron"]).replace("’", "")


def _pause(node: NJDFeature) -> bool:
    return int(node["mora_size"]) == 0


def _half(s: str) -> str:
    """Full-width ASCII (OpenJTalk widens its input) back to what was written."""
    return "".join(unicodedata.normalize("NFKC", c) if "\uff01" <= c <= "\uff5e" else c
                   for c in s)


def _spoken_token(node: NJDFeature) -> str:
    s = str(node["string"])
    if _JAPANESE.fullmatch(s) or _pause(node):
        return _half(s)
    plain = _half(s)
    if _DIGITS.search(plain):
        from num2words import num2words

        return _DIGITS.sub(lambda m: num2words(int(m.group()), lang="ja"), plain)
    pron = _pron(node)
    return "点" if pron == _DECIMAL_POINT else pron


def spoken(text: str, nodes: list[NJDFeature]) -> str:
    """``text`` with OpenJTalk's numbers and readings (module doc), aligned on ``nodes``: a node
    whose string is found at the cursor in the widened text takes its span there; one made of a
    digit run (kanji numerals: ``8200`` -> 八, 千, 二, 百) takes the run, then any of its own
    tail found next (``5日`` -> 五日); a node found a few characters on leaves what it skipped
    as written."""
    wide = _widen(text)
    out: list[str] = []
    pos = 0
    for node in nodes:
        s = str(node["string"])
        while pos < len(wide) and wide[pos].isspace():
            out.append(text[pos])
            pos += 1
        if wide.startswith(s, pos):
            out.append(text[pos:pos + len(s)] if _JAPANESE.fullmatch(s) else _spoken_token(node))
            pos += len(s)
            continue
        run = _NUMBER.match(wide, pos)
        if run is not None:
            pos = run.end()
            pos += next((k for k in range(len(s) - 1, 0, -1) if wide.startswith(s[-k:], pos)), 0)
        else:
            ahead = wide.find(s, pos, pos + _LOOK_AHEAD + len(s))
            if ahead >= 0:
                out.append(text[pos:ahead])
                pos = ahead + len(s)
        out.append(_spoken_token(node))
    return "".join(out) + text[pos:]


_LOOK_AHEAD = 8  # characters OpenJTalk may drop between two words (spaces, marks it ignores)


def _widen(text: str) -> str:
    """The text as OpenJTalk's front end sees it: ASCII widened one character for one."""
    return "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else
                   ("\u3000" if c == " " else c) for c in text)


_NUMBER = re.compile(r"[０-９][０-９，．]*")


def reading(nodes: list[NJDFeature]) -> str:
    return "".join("、" if _pause(n) else _pron(n) for n in nodes).strip("、")


def accent(nodes: list[NJDFeature]) -> str:
    """The accent phrases (module doc): a node with ``chain_flag`` 1 joins the phrase before;
    a phrase's accent is its first node's ``acc`` (OpenJTalk sets it there when it chains)."""
    phrases: list[tuple[list[str], int]] = []
    parts: list[str] = []
    for n in nodes:
        if _pause(n):
            phrases.append(([], -1))
            continue
        m = morae(_pron(n))
        if n["chain_flag"] == 1 and phrases and phrases[-1][1] >= 0:
            phrases[-1][0].extend(m)
        else:
            phrases.append((m, int(n["acc"])))
    for m, acc in phrases:
        if acc < 0:
            if parts and parts[-1] != "、":
                parts.append("、")
            continue
        text = "".join(m[:acc]) + "'" + "".join(m[acc:]) if 0 < acc < len(m) + 1 else "".join(m)
        if parts and parts[-1] != "、":
            parts.append("/")
        parts.append(text)
    while parts and parts[-1] == "、":
        parts.pop()
    return "".join(parts)


class JapaneseText:
    """OpenJTalk's front end, loaded on first use (its dictionary load is the cost)."""

    name = NAME

    @property
    def version(self) -> str:
        return metadata.version(PACKAGE)

    def forms(self, text: str) -> JapaneseForms:
        import pyopenjtalk

        if not text.strip():
            return JapaneseForms(text, "", "")
        nodes = pyopenjtalk.run_frontend(text)
        return JapaneseForms(spoken(text, nodes), reading(nodes), accent(nodes))
