"""The contamination scrub: training segments that hold a test set's audio or words.

**Audio.** Each test utterance is fingerprinted as the enhance stage fingerprints a segment's
input (services/dedup/fingerprint.py: 32 bits per 16 ms of the telephone band). A training
segment's fingerprint (its signature file's ``fp``) is looked up by its 16-bit halves: a
half that survives a re-encode (most do, at the bit error rates of a copy) names the test
utterances and the frames holding it; the offsets those hits agree on propose candidates
(``MIN_VOTES`` hits at one alignment), and :func:`services.dedup.fingerprint.compare`
confirms a candidate at the dedup threshold (BER <= 0.30 on their overlap, at least half of
the shorter). A test utterance inside a longer segment, or a segment cut from one, is found:
compare slides the shorter along the whole of the longer, and a part of at least a fifth of the
shorter and a second of audio is enough (an utterance cut across two segments).

**Text.** Test transcripts are folded as dedup folds text (services/dedup/text.py) and cut
into word n-grams of ``NGRAM`` words; a training segment whose text holds one of them is
removed. A transcript shorter than that is matched by its audio only (a short phrase is said
by everyone).
"""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from services.dedup.fingerprint import FRAMES_PER_SECOND, compare, fingerprint
from services.dedup.text import normalise
from services.ops.provenance.testsets import RATE, utterances

NGRAM = 8  # words: a sentence's worth; 8-word phrases recur by chance ~never in speech
MIN_VOTES = 3  # fingerprint halves agreeing on one alignment to propose a candidate
MAX_BUCKET = 64  # a half held by more test frames than this proposes nothing (silence)
MAX_BER = 0.30  # the dedup matcher's threshold (ONSEI_DEDUP_MAX_BER's default)
# a test utterance cut across two segments leaves a part in each: each part is matched when
# it holds a fifth of the shorter of the two, and at least a second of audio
MIN_OVERLAP = 0.2
MIN_OVERLAP_FRAMES = int(1.0 * FRAMES_PER_SECOND)


def _halves(fp: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each frame's two keys: the high half, and the low half in its own range."""
    f = fp.astype(np.int64)
    return f >> 16, (f & 0xFFFF) | 0x10000


def _grams(text: str, language: str | None = None) -> list[str]:
    words = normalise(text, language).split()
    return [" ".join(words[i:i + NGRAM]) for i in range(len(words) - NGRAM + 1)]


def _gram_key(gram: str) -> bytes:
    return hashlib.blake2b(gram.encode(), digest_size=8).digest()


@dataclass
class ScrubIndex:
    """The test sets' fingerprints and n-grams, with the set each came from."""

    names: list[str] = field(default_factory=list)  # test set of each utterance
    fps: list[np.ndarray] = field(default_factory=list)
    keys: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))  # sorted
    utt: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    frame: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    grams: dict[bytes, str] = field(default_factory=dict)  # n-gram -> test set
    utterances: Counter[str] = field(default_factory=Counter)  # test set -> utterances
    unreadable: Counter[str] = field(default_factory=Counter)  # test set -> undecodable audio
    without_text: Counter[str] = field(default_factory=Counter)

    @classmethod
    def build(cls, folders: list[Path]) -> ScrubIndex:
        ix = cls()
        keys, utt, frame = [], [], []
        for folder in folders:
            name = folder.resolve().name
            for u in utterances(folder):
                ix.utterances[name] += 1
                for g in _grams(u.text):
                    ix.grams.setdefault(_gram_key(g), name)
                if not u.text.strip():
                    ix.without_text[name] += 1
                if u.audio is None:
                    ix.unreadable[name] += 1
                    continue
                fp = fingerprint(u.audio, RATE)
                n = len(ix.fps)
                ix.names.append(name)
                ix.fps.append(fp)
                for half in _halves(fp):
                    keys.append(half)
                    utt.append(np.full(fp.size, n, np.int32))
                    frame.append(np.arange(fp.size, dtype=np.int32))
        if keys:
            k, u_, f_ = np.concatenate(keys), np.concatenate(utt), np.concatenate(frame)
            uniq, counts = np.unique(k, return_counts=True)
            common = uniq[counts > MAX_BUCKET]
            keep = ~np.isin(k, common)
            order = np.argsort(k[keep], kind="stable")
            ix.keys, ix.utt, ix.frame = k[keep][order], u_[keep][order], f_[keep][order]
        return ix

    def by_audio(self, fp: np.ndarray) -> str | None:
        """The test set whose utterance this segment's fingerprint holds (None: none)."""
        if fp.size < 2 or self.keys.size == 0:
            return None
        seg_frames = np.arange(fp.size, dtype=np.int64)
        votes = []
        for half in _halves(fp):
            lo = np.searchsorted(self.keys, half, "left")
            hi = np.searchsorted(self.keys, half, "right")
            n = hi - lo
            if not n.any():
                continue
            rows = np.repeat(lo, n) + (np.arange(n.sum()) - np.repeat(np.cumsum(n) - n, n))
            at = np.repeat(seg_frames, n)
            votes.append(self.utt[rows].astype(np.int64) << 32
                         | ((at - self.frame[rows]) + (1 << 31)))
        if not votes:
            return None
        cand, counts = np.unique(np.concatenate(votes), return_counts=True)
        tried: set[int] = set()
        order = np.argsort(-counts, kind="stable")[:8]
        for c, n in zip(cand[order], counts[order], strict=True):
            if n < MIN_VOTES:
                break
            u = int(c >> 32)
            if u in tried:
                continue
            tried.add(u)
            a = self.fps[u]
            # any alignment: the part of a test utterance a segment holds may start anywhere
            m = compare(a, fp, a.size + fp.size, MIN_OVERLAP)
            if m.ber <= MAX_BER and m.overlap * min(a.size, fp.size) >= MIN_OVERLAP_FRAMES:
                return self.names[u]
        return None

    def by_text(self, text: str | None, language: str | None = None) -> str | None:
        """The test set one of whose n-grams ``text`` holds: as written, and with its numbers
        spelled out in its ``language`` (a test transcript may hold either form)."""
        if not text or not self.grams:
            return None
        forms = dict.fromkeys([None, language])
        for g in (g for lang in forms for g in _grams(text, lang)):
            got = self.grams.get(_gram_key(g))
            if got is not None:
                return got
        return None

    def match(self, table: Any) -> dict[str, tuple[str, str]]:
        """Segment id (within its shard) -> (test set, ``audio`` or ``text``) for the rows of
        a signature table (``id``, ``text``, ``language``, ``fp``) that a test set holds."""
        out: dict[str, tuple[str, str]] = {}
        ids = table.column("id").to_pylist()
        texts = table.column("text").to_pylist()
        languages = table.column("language").to_pylist()
        fps = table.column("fp").to_pylist()
        for i, text, lang, raw in zip(ids, texts, languages, fps, strict=True):
            got = self.by_audio(np.frombuffer(raw or b"", "<u4"))
            if got is not None:
                out[i] = (got, "audio")
                continue
            got = self.by_text(text, lang)
            if got is not None:
                out[i] = (got, "text")
        return out
