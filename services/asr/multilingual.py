"""Each encoder window decoded in its own language; a window that holds a switch, split at it.

A podcast or a video switches languages (a Japanese show with English prompts, a guest's
English answer): one language per file decoded the other language's speech with the wrong
language token (Whisper then translates, or writes nothing). Each window's language comes from
its own encoder output, in thirds (``langid.slices``: one decoder step each, no encoder pass):
thirds sure of two different languages mean a switch inside the window, and a window next to
one in another language may hold it near that edge. There each speech span is encoded alone and
given a language among the two (``langid.unit_languages``: a switch must be worth its evidence),
and a window that holds a switch is decoded again as one window per run of spans, each with its
language. A window's speech in a language not kept is not decoded at all; its clips become
segments flagged ``language``. A clip whose spans differ in language is cut at the switch
(:func:`by_language`): each TTS segment is in one language.

Cost: one language-ID call per window; where languages differ, one encoder pass per span looked
at and per run of several spans decoded again; a span's rows are kept (encodings.py), so a run
of one span, or a coverage retry of it, is decoded without another pass (docs/asr.md).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field

import numpy as np

from services.asr.batched import ClipText, ClipTranscriber
from services.asr.clips import Clip
from services.asr.coverage import Coverage, Decode, recover
from services.asr.encodings import Encodings
from services.asr.langid import slices, unit_languages, window_language
from services.asr.windows import Span, Window, alone, split

NOT_DECODED = ClipText("", 0.0, 1.0, [])  # a window in a language not kept
# a window next to one in another language: its spans in this last (first) share of it, on the
# side of that neighbour, are looked at alone (a switch further in leaves its thirds unsure)
EDGE = 2 / 3


@dataclass
class Decoded:
    windows: list[Window] = field(default_factory=list)
    texts: list[ClipText] = field(default_factory=list)
    languages: list[str] = field(default_factory=list)  # each window's

    def extend(self, other: Decoded) -> None:
        self.windows += other.windows
        self.texts += other.texts
        self.languages += other.languages

    def span_languages(self) -> dict[Span, str]:
        return {span: lang for w, lang in zip(self.windows, self.languages)
                for span, _ in w.units}


class WindowDecoder:
    """Windows of one file (16 kHz ``audio``) to texts, each window in its own language; only
    windows in a ``kept`` language are decoded."""

    def __init__(self, tr: ClipTranscriber, audio: np.ndarray, kept: list[str],
                 batch_size: int, clock: Callable[[], AbstractContextManager[None]],
                 keep_words: bool = True) -> None:
        self.tr, self.audio, self.kept, self.batch_size, self.clock = (
            tr, audio, kept, batch_size, clock)
        self.keep_words = keep_words  # texts only when False (windows.split)
        self.switches = 0  # windows split at a language switch
        self._checked: set[int] = set()  # windows whose spans got a language each (ids)
        self.encodings = Encodings(tr, audio)  # a span alone encoded once (encodings.py)

    def run(self, windows: list[Window], beam: int | None = None, feats: np.ndarray | None = None,
            rows: np.ndarray | None = None, languages: list[str] | None = None,
            no_repeat: int = 0) -> Decoded:
        """Texts of ``windows``, batched; the first ``len(rows)`` already encoded (``feats``);
        ``languages`` given: each window's (no language ID); ``no_repeat``: the decoder's
        no-repeat n-gram size (ClipTranscriber.transcribe; 0: off)."""
        assert languages is None or rows is None  # rows given: the stage's language ID
        out = Decoded()
        runs: list[Window] = []  # the parts of windows that hold a switch
        run_languages: list[str] = []
        for b in range(0, len(windows), self.batch_size):
            part = windows[b:b + self.batch_size]
            with self.clock():
                if languages is not None:  # one in a language not kept: not even encoded
                    langs: list[str | None] = list(languages[b:b + len(part)])
                    heard = [j for j, x in enumerate(langs) if x in self.kept]
                    f, r = (self.encodings.encode([part[j] for j in heard]) if heard
                            else (None, None))
                else:
                    f, r = self._encoded(part, b, feats, rows)
                    heard = list(range(len(part)))
                    langs = self._languages(part, r, runs, run_languages)
                self._decode(part, f, r, heard, langs, (beam, no_repeat), out)
        if runs:
            out.extend(self.run(runs, beam, languages=run_languages, no_repeat=no_repeat))
        if languages is None:
            self._neighbours(out, beam)
        return out

    def _encoded(self, part: list[Window], b: int, feats: np.ndarray | None,
                 rows: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        """(features, rows) of ``part``, the windows from ``b`` on of a :meth:`run`: those
        already encoded (``feats``, ``rows``: the stage's language-ID looks) taken, the
        others encoded here, the stage's way (batched.py)."""
        done = 0 if rows is None else len(rows[b:b + len(part)])
        if not done:
            return self.encodings.encode(part)
        assert feats is not None and rows is not None
        f, r = feats[b:b + done], rows[b:b + done]
        self.encodings.keep(part[:done], r)
        if done < len(part):
            nf, nr = self.encodings.encode(part[done:])
            f, r = np.concatenate([f, nf]), np.concatenate([r, nr])
        return f, r

    def _neighbours(self, out: Decoded, beam: int | None) -> None:
        """Windows next to one in another language (in file order), not yet looked at span by
        span: a switch near a window's edge leaves its thirds sure of one language. Each is
        encoded again and its spans given a language among the two; a window that holds the
        switch is decoded again, as runs (only where languages differ: the cost of a switch)."""
        order = sorted(range(len(out.windows)), key=lambda i: out.windows[i].spans[0][0])
        candidates: dict[int, list[str]] = {}
        sides: dict[int, tuple[float, float]] = {}
        for a, b in itertools.pairwise(order):
            la, lb = out.languages[a], out.languages[b]
            if la == lb:
                continue
            for i, other, side in ((a, lb, (EDGE, 1.0)), (b, la, (0.0, 1.0 - EDGE))):
                if id(out.windows[i]) in self._checked:
                    continue
                candidates.setdefault(i, [out.languages[i]]).append(other)
                lo, hi = sides.get(i, side)
                sides[i] = (min(lo, side[0]), max(hi, side[1]))
        if not candidates:
            return
        idx = sorted(candidates)
        with self.clock():
            split, runs, run_languages = self._runs([out.windows[i] for i in idx],
                                                    [candidates[i] for i in idx],
                                                    [sides[i] for i in idx])
        if not runs:
            return
        drop = {id(out.windows[idx[k]]) for k in split}
        keep = [i for i, w in enumerate(out.windows) if id(w) not in drop]
        out.windows = [out.windows[i] for i in keep]
        out.texts = [out.texts[i] for i in keep]
        out.languages = [out.languages[i] for i in keep]
        out.extend(self.run(runs, beam, languages=run_languages))

    def _languages(self, part: list[Window], rows: np.ndarray, runs: list[Window],
                   run_languages: list[str]) -> list[str | None]:
        """Each window's language (None: it holds a switch, its runs added to ``runs``)."""
        hop = self.tr.model.feature_extractor.hop_length
        frames = [max(1, w.frames(hop) // 2) for w in part]  # encoder rows: 2 mel frames each
        out: list[str | None] = []
        mixed: list[tuple[int, list[str]]] = []
        for j, dists in enumerate(self.tr.detect_slices(rows, [slices(n, total=rows.shape[1])
                                                                 for n in frames])):
            lang, sure = window_language(dists, self.kept)
            out.append(lang)
            if len(sure) > 1:
                mixed.append((j, sure))
        if mixed:
            split, got, got_languages = self._runs([part[j] for j, _ in mixed],
                                                   [sure for _, sure in mixed],
                                                   [(0.0, 1.0)] * len(mixed))
            for k in split:
                out[mixed[k][0]] = None
            runs += got
            run_languages += got_languages
        return out

    def _runs(self, part: list[Window], candidates: list[list[str]],
              sides: list[tuple[float, float]]) -> tuple[list[int], list[Window], list[str]]:
        """The spans of each window whose middle lies in its ``sides`` (fractions of the
        window) given a language among its ``candidates``, each span encoded alone (Whisper is
        sure of a span alone, not of its rows cut out of a window: 3 s of English said
        Hawaiian, Finnish); the others keep the window's (the first candidate). The windows
        that hold a switch (indices in ``part``), their runs of one language each, and those
        languages."""
        looked: list[list[int]] = []
        for w, (lo, hi) in zip(part, sides):
            length = w.seconds or 1.0
            looked.append([u for u, (a, b) in enumerate(w.bounds())
                           if lo <= (a + b) / 2 / length <= hi])
        alone = [Window([w.units[u]]) for w, us in zip(part, looked) for u in us]
        rows = self.encodings.encode(alone, keep=False)[1] if alone else None
        dists = iter(self.tr.detect_language(rows) if rows is not None else [])
        split: list[int] = []
        runs: list[Window] = []
        languages: list[str] = []
        for k, (w, cands, us) in enumerate(zip(part, candidates, looked)):
            self._checked.add(id(w))
            per_span = [next(dists) if u in us else [(cands[0], 1.0)]
                        for u in range(len(w.units))]
            langs = unit_languages(per_span, cands, [b - a for (a, b), _ in w.units])
            if len(set(langs)) == 1:
                continue
            self.switches += 1
            split.append(k)
            for u, unit in enumerate(w.units):
                if u and langs[u] == langs[u - 1]:
                    runs[-1].units.append(unit)
                else:
                    runs.append(Window([unit]))
                    self._checked.add(id(runs[-1]))
                    languages.append(langs[u])
        if rows is not None:  # a run of one span in a kept language is decoded from these
            self.encodings.keep(alone, rows, {tuple(r.spans) for r, x in zip(runs, languages)
                                              if len(r.units) == 1 and x in self.kept})
        return split, runs, languages

    def _decode(self, part: list[Window], f: np.ndarray | None, r: np.ndarray | None,
                heard: list[int], langs: list[str | None], how: tuple[int | None, int],
                out: Decoded) -> None:
        """One batched decode per language among ``part`` (one call when it has one); ``f``,
        ``r``: the features and rows of the windows ``heard`` (indices in ``part``: every
        window in a kept language); ``how``: (beam size, no-repeat n-gram size)."""
        at = {j: k for k, j in enumerate(heard)}
        for lang in dict.fromkeys(x for x in langs if x is not None):
            idx = [j for j, x in enumerate(langs) if x == lang]
            ws = [part[j] for j in idx]
            if lang in self.kept:
                assert f is not None and r is not None
                sel = [at[j] for j in idx]
                every = sel == list(range(len(f)))
                texts = self.tr.transcribe(f if every else f[sel], lang,
                                           r if every else r[sel], beam_size=how[0],
                                           frames=self.tr.frames(ws), no_repeat=how[1])
            else:
                texts = [NOT_DECODED for _ in ws]
            out.windows += ws
            out.texts += texts
            out.languages += [lang] * len(ws)


def by_language(clips: list[Clip], span_language: dict[Span, str]
                ) -> tuple[list[Clip], list[str | None], dict[Span, int]]:
    """``clips`` cut where their spans' language changes: the clips, each one's language, and
    each span's clip."""
    new: list[Clip] = []
    langs: list[str | None] = []
    index: dict[Span, int] = {}
    for c in clips:
        for k, p in enumerate(c.parts()):
            lang = span_language.get((p.start, p.end))
            if k and lang == langs[-1]:
                last = new[-1]
                last.pauses.append((last.end, p.start))
                last.end = p.end
            else:
                new.append(Clip(p.start, p.end))
                langs.append(lang)
            index[(p.start, p.end)] = len(new) - 1
    return new, langs, index


def relabel(windows: list[Window], index: dict[Span, int]) -> list[Window]:
    """``windows`` with each span given to its clip after :func:`by_language`."""
    return [Window([(span, index[span]) for span, _ in w.units]) for w in windows]


def recover_each(clips: list[Clip], texts: list[ClipText], languages: list[str | None],
                 kept: list[str], decoder: WindowDecoder,
                 looped: Callable[[str], bool]) -> Coverage:
    """Text coverage (coverage.recover) per language: each has its own text rate; retries are
    decoded in their clip's language. ``texts`` is updated in place."""
    total = Coverage(0.0, 0, set())
    for lang in dict.fromkeys(x for x in languages if x in kept):
        assert lang is not None
        idx = [i for i, x in enumerate(languages) if x == lang]
        sub = [texts[i] for i in idx]

        def decoding(lang: str) -> Decode:
            def decode(parts: list[Clip], beam: int, no_repeat: int) -> list[ClipText]:
                windows = alone(parts)
                got = decoder.run(windows, beam, languages=[lang] * len(windows),
                                  no_repeat=no_repeat)
                return split(parts, got.windows, got.texts, decoder.audio, decoder.keep_words)

            return decode

        cov = recover([clips[i] for i in idx], sub, lang, decoding(lang), looped)
        for i, t in zip(idx, sub):
            texts[i] = t
        total.retried += cov.retried
        total.short |= {idx[k] for k in cov.short}
        total.rate = max(total.rate, cov.rate)
    return total
