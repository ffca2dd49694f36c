"""A voice, from an audio sample of it, matched to the corpus speakers (docs/speakers.md): the
sample is embedded as the enhance stage embeds a segment (Resemblyzer's network, our loader:
services/enhance/quality/speaker.py) and looked up in the corpus speaker index; every
corpus speaker whose centroid is at or above the threshold's cosine is that voice."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from common.ledger.store import Ledger
from common.settings import Settings
from common.shards.audio import AudioError, decode_audio
from common.storage import Store
from services.ops.provenance.requests import Takedown
from services.speakers.result import speaker_name
from services.speakers.settings import SpeakersSettings

SEARCH_K = 32  # corpus speakers looked at: one voice may be several (heard through channels)


class VoiceError(ValueError):
    """A sample that cannot be used, or no speaker index to match it in."""


def embed(sample: Path) -> np.ndarray:
    from services.enhance.quality.speaker import SR, SpeakerEncoder

    try:
        audio = decode_audio(sample.read_bytes(), SR)
    except (AudioError, OSError) as e:
        raise VoiceError(f"--voice {sample}: not audio onsei can read ({e})") from None
    if audio.size < SR:
        raise VoiceError(f"--voice {sample}: {audio.size / SR:.2f} s; a voice needs at least "
                         "1 s of speech (a few seconds match better)")
    return SpeakerEncoder().score([audio])[0].embedding


def match(settings: SpeakersSettings, store: Store, ledger: Ledger, embedding: np.ndarray,
          threshold: float) -> list[tuple[str, float]]:
    """(corpus speaker, cosine) of every speaker the embedding matches, best first."""
    from services.speakers.run import SpeakerLinker

    index = SpeakerLinker(settings, store, ledger).published_index()
    if len(index) == 0:
        raise VoiceError("no corpus speakers under this output root: run `onsei speakers` "
                         "first (a voice is matched through its index)")
    x = np.asarray(embedding, np.float32)
    keys, sims = index.nearest((x / max(float(np.linalg.norm(x)), 1e-9))[None, :], SEARCH_K)
    return [(speaker_name(int(k)), round(float(c), 4)) for k, c in zip(keys[0], sims[0],
                                                                        strict=True)
            if k >= 0 and c >= threshold]


def rematch(settings: Settings, store: Store, ledger: Ledger,
            requests: list[Takedown]) -> list[Takedown]:
    """``requests`` with each voice request's speakers joined by those its sample matches in
    the corpus speaker index now (a voice linked as a new speaker since the request)."""
    voices = [t for t in requests if t.kind == "voice" and t.embedding]
    if not voices:
        return requests
    section = SpeakersSettings(**{k: getattr(settings, k) for k in Settings.model_fields})
    out = []
    for t in requests:
        if t in voices:
            try:
                now = match(section, store, ledger, np.asarray(t.embedding),
                            t.threshold or section.speakers_link_threshold)
            except VoiceError:
                now = []
            t = t.model_copy(update={"speakers": sorted({*t.speakers, *(s for s, _ in now)})})
        out.append(t)
    return out
