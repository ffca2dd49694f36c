"""Markdown for the dataset card: text from the data shown as it is, code spans, tables."""

from __future__ import annotations

import re

from common.display import visible


def hours(seconds: float) -> str:
    return f"{seconds / 3600:.3f}"


# Text from the data (the output URL, languages, reasons, errors, the done records' models)
# goes into the card as Markdown that shows it as it is: a backtick or a `<` in it must neither
# end a code span nor open raw HTML, and a line break or `|` must not end a table row.
SPECIAL = re.compile(r"[\\`*_\[\]<>&|~]")


def plain(text: str) -> str:
    return visible(str(text))


def text(text: str) -> str:
    """Text shown as is: every character Markdown could read as markup backslash-escaped."""
    return SPECIAL.sub(lambda m: "\\" + m.group(), plain(text))


def code(text: str, in_table: bool = False) -> str:
    """A code span holding ``text`` whatever it holds: fenced by more backticks than its
    longest run, padded when it starts or ends with a backtick or a space; in a table a `|`
    is escaped (GFM splits cells before it reads code spans)."""
    body = plain(text)
    if in_table:
        body = body.replace("|", "\\|")
    fence = "`" * (max((len(r) for r in re.findall("`+", body)), default=0) + 1)
    if body[:1] in ("`", " ") or body[-1:] in ("`", " "):
        body = f" {body} "
    return f"{fence}{body}{fence}"


def table(headers: list[str], rows: list[list[str]]) -> list[str]:
    out = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return out if rows else ["(none)"]
