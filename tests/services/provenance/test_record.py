"""Provenance from a file's metadata: read, never guessed; SPDX ids kept canonical, anything
else kept as given and flagged."""

from __future__ import annotations

import pytest

from services.provenance.record import UNKNOWN, Provenance, spdx


def test_known_ids_take_their_spdx_spelling_and_refs_pass() -> None:
    assert spdx("cc-by-4.0") == ("CC-BY-4.0", True)
    assert spdx(" CC0-1.0 ") == ("CC0-1.0", True)
    assert spdx("LicenseRef-podcast-terms") == ("LicenseRef-podcast-terms", True)
    assert spdx("LicenseRef-") == ("LicenseRef-", False)
    assert spdx("Creative Commons Attribution license (reuse allowed)") == (
        "Creative Commons Attribution license (reuse allowed)", False)


def test_yt_dlp_style_keys_and_our_own() -> None:
    p = Provenance.of_metadata({"webpage_url": "https://v.example/x", "license": "cc-by-sa-4.0",
                                "channel": "Chan", "upload_date": 20240105, "id": "x"})
    assert (p.source, p.licence, p.owner, p.date, p.licence_ok) == (
        "https://v.example/x", "CC-BY-SA-4.0", "Chan", "20240105", True)
    nested = Provenance.of_metadata({"source_path": "a.wav", "provenance": {
        "source": "id-1", "licence": "Weird", "owner": "O"}})
    assert (nested.source, nested.licence, nested.licence_ok) == ("id-1", "Weird", False)


@pytest.mark.parametrize("meta", [None, [], "text", {}, {"license": ""}, {"license": 4},
                                  {"source_path": "a.wav", "duration_seconds": 3.0}])
def test_no_metadata_is_unknown(meta) -> None:
    p = Provenance.of_metadata(meta)
    assert (p.source, p.licence, p.owner, p.date) == (UNKNOWN,) * 4
    assert p.licence_ok and not p.known
