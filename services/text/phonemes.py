"""English IPA through espeak-ng (the phonemizer package's binding to libespeak-ng, the system
library: Debian's espeak-ng). Off unless ``asr_phonemes`` is set: a trainer that wants
phonemes usually runs its own front end."""

from __future__ import annotations

from functools import cache
from typing import Any


@cache
def _backend() -> Any:
    import logging

    from phonemizer.backend import EspeakBackend

    logging.getLogger("phonemizer").setLevel(logging.ERROR)
    return EspeakBackend("en-us", with_stress=True, preserve_punctuation=True)


def english_ipa(text: str) -> str:
    """IPA of ``text`` (words separated by spaces, stress marks kept)."""
    if not text.strip():
        return ""
    out = _backend().phonemize([text], strip=True, njobs=1)
    return str(out[0]).strip()
