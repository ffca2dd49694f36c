"""``ONSEI_SHARD_PATTERN`` names a shard inside the input root and, without its ``.tar``, each
stage's outputs inside the output root: it may name folders below them (``x/{id}.tar``) but
never climb out of them. Its literal text is a relative path without ``..``, ``.``, empty
parts, backslashes or control characters, and ``{id}`` is formatted as digits only (a width,
zero padding, or the x/X/o/b bases: a fill character or ``{id:c}`` would write ``/`` or ``.``
for some ids)."""

from __future__ import annotations

import re
import string

# [0>][#][0][width][type]: digits (hex, octal, binary), zero-padded; no other fill, no sign,
# no ``c``
_SPEC = re.compile(r"(?:0[>=])?#?0?[0-9]{0,3}[dxXob]?")
_CONTROL = re.compile(r"[\x00-\x1f\x7f\\]")


def climbs(pattern: str) -> str | None:
    """Why ``pattern`` could name a path outside its root, or None when it cannot."""
    literal = []
    for text, field, spec, conversion in string.Formatter().parse(pattern):
        literal.append(text)
        if field is None:
            continue
        if conversion or not _SPEC.fullmatch(spec or ""):
            return (f"{{{field}{'!' + conversion if conversion else ''}:{spec}}} may write "
                    "other characters than digits (use {id}, {id:06d} or {id:x})")
        literal.append("0")
    path = "".join(literal)
    if _CONTROL.search(path):
        return "it holds a backslash or a control character"
    parts = path.split("/")
    if path.startswith("/"):
        return "it is an absolute path (it names a shard inside the input root)"
    if any(p in ("", ".", "..") for p in parts):
        return "it holds an empty, '.' or '..' part (a shard stays inside the input root)"
    return None
