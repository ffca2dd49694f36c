"""One input file's provenance, read from its metadata (WebDataset ``.json`` member, or the
manifest ``onsei pack-audio --manifest`` read), never guessed.

A file without metadata, or a field the metadata does not give, is ``unknown``. The licence is
kept as an SPDX id: a known id (matched case-insensitively, as SPDX ids are) is written in its
canonical spelling, a ``LicenseRef-*`` as given; any other string is kept exactly as given and
flagged (``licence_ok`` false) so the card can name it, never mapped to an id it might not be.
"""

from __future__ import annotations

from typing import Any

from common.record import Record

UNKNOWN = "unknown"

# The licences of speech and video collections met in practice, with their SPDX spelling.
_CC = [f"CC-{v}-{n}" for v in ("BY", "BY-SA", "BY-NC", "BY-NC-SA", "BY-ND", "BY-NC-ND")
       for n in ("1.0", "2.0", "2.5", "3.0", "4.0")]
KNOWN = {x.lower(): x for x in [
    "CC0-1.0", "CC-PDDC", "PDDL-1.0", "ODC-By-1.0", "ODbL-1.0", "MIT", "Apache-2.0",
    "BSD-2-Clause", "BSD-3-Clause", "Unlicense", "GPL-2.0-only", "GPL-3.0-only",
    "GPL-2.0-or-later", "GPL-3.0-or-later", "LGPL-2.1-only", "LGPL-3.0-only", "MPL-2.0",
    "Artistic-2.0", "CDLA-Permissive-2.0", "CDLA-Sharing-1.0", *_CC, "CC-BY-3.0-US",
    "CC-BY-SA-3.0-IGO", "CC-BY-4.0-DE"]}

# metadata keys read for each field, first present wins: ours, then the names yt-dlp's
# ``.info.json`` and common dataset manifests use for the same thing
_KEYS = {"source": ("source", "source_url", "url", "webpage_url", "source_id"),
         "licence": ("licence", "license", "spdx"),
         "owner": ("owner", "channel", "uploader", "author", "artist"),
         "date": ("date", "upload_date", "published", "release_date")}


def spdx(value: str) -> tuple[str, bool]:
    """(the licence as written, whether it is a known SPDX id or a ``LicenseRef-``)."""
    text = value.strip()
    if text.lower() in KNOWN:
        return KNOWN[text.lower()], True
    if text.startswith("LicenseRef-") and len(text) > len("LicenseRef-"):
        return text, True
    return text, False


class Provenance(Record):
    """``licence_ok``: the licence is an SPDX id onsei knows, a ``LicenseRef-``, or unknown
    (False: a string kept as given, flagged)."""

    source: str = UNKNOWN
    licence: str = UNKNOWN
    owner: str = UNKNOWN
    date: str = UNKNOWN
    licence_ok: bool = True

    @classmethod
    def of_metadata(cls, meta: Any) -> Provenance:
        """From a member's JSON object: its ``provenance`` object when it has one, else its own
        keys. Anything not a non-empty string (or number, for a date) stays unknown."""
        if not isinstance(meta, dict):
            return cls()
        inner = meta.get("provenance")
        d = inner if isinstance(inner, dict) else meta
        got: dict[str, Any] = {}
        for field, keys in _KEYS.items():
            for k in keys:
                v = d.get(k)
                if isinstance(v, int) and not isinstance(v, bool) and field == "date":
                    v = str(v)
                if isinstance(v, str) and v.strip():
                    got[field] = v.strip()
                    break
        if "licence" in got:
            got["licence"], got["licence_ok"] = spdx(got["licence"])
        return cls(**got)

    @property
    def known(self) -> bool:
        return self.source != UNKNOWN or self.licence != UNKNOWN
