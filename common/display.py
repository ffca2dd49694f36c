"""Data shown to a person: a file name, a failure reason or a URL is text, never a command to
the terminal or to rich.

``visible`` writes every control character as its Python escape (``\\x1b``, ``\\n``,
``\\u2028``): an ESC sequence cannot reach the terminal, a newline cannot forge a line, a
bidi override cannot reorder what follows. ``markup`` also escapes rich markup (``[/x]``,
``[link=...]``), for text put inside a rich markup string.

``has_control`` is the input rule for shard keys (common/shards/members.py): a key holding one
of these characters is refused, per file, with a reason.
"""

from __future__ import annotations

import unicodedata

# line and paragraph separators split lines (str.splitlines, editors); the bidi embeddings,
# overrides and isolates reorder the text after them on screen
_BIDI = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def _control(c: str) -> bool:
    return unicodedata.category(c) in ("Cc", "Zl", "Zp") or c in _BIDI


def has_control(text: str) -> bool:
    """True when ``text`` holds a character that ``visible`` would escape."""
    return any(_control(c) for c in text)


def visible(text: str) -> str:
    """``text`` with each control character as its escape; anything else as it is."""
    if not has_control(text):
        return text
    return "".join(c.encode("unicode_escape").decode("ascii") if _control(c) else c
                   for c in text)


def markup(text: object) -> str:
    """``text`` (any value, as ``str``) safe inside rich markup: escaped and visible."""
    from rich.markup import escape

    return escape(visible(str(text)))
