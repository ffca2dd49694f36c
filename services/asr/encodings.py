"""Encoder output of one file's windows, each span heard alone encoded once.

Whisper's encoder pads every window to 30 s, so a 3 s span encoded alone costs a full pass. A
file that switches languages encodes spans alone to give each its language
(multilingual.WindowDecoder), and the same span alone is then what a run of one span is decoded
from, what a coverage retry decodes a clip's part from (coverage.recover), and what a looping
part is decoded from once more without repeats: the same audio, so the same features and the
same rows. The rows of windows of one span are kept here, past :data:`KEPT_BYTES` the least
recently used dropped first, those still wanted (a run of one span not yet decoded) last, and
such a window is encoded once per file. Windows of several spans (the packed 30 s windows, a
run of spans) are not kept: they are met once.
"""

from __future__ import annotations

from collections import Counter, OrderedDict
from collections.abc import Collection, Sequence

import numpy as np

from services.asr.batched import ClipTranscriber
from services.asr.windows import Span, Window

# Rows kept per file: 1500 x d_model float32 a window, 3 MB for Whisper base (10 windows),
# 7.7 MB for large-v3 and its turbo (4). A switch's looked-at spans are reused within the same
# run call or by the file's coverage retries, a few to a dozen windows after.
KEPT_BYTES = 32 << 20


class Encodings:
    """Features and encoder rows of windows of one file (16 kHz ``audio``)."""

    def __init__(self, tr: ClipTranscriber, audio: np.ndarray,
                 kept_bytes: int = KEPT_BYTES) -> None:
        self.tr, self.audio, self.kept_bytes = tr, audio, kept_bytes
        self._rows: OrderedDict[tuple[Span, ...], np.ndarray] = OrderedDict()
        self._wanted: set[tuple[Span, ...]] = set()  # kept for a decode to come
        self.encoded: Counter[tuple[Span, ...]] = Counter()  # encoder passes, by window
        self.reused = 0  # windows whose kept rows served again

    def encode(self, windows: Sequence[Window], keep: bool = True
               ) -> tuple[np.ndarray, np.ndarray]:
        """(features, rows) of ``windows``, one each, in order; the kept rows of a window met
        before, the others encoded in one :meth:`ClipTranscriber.rows` call, and kept unless
        ``keep`` is False (the caller keeps them once it knows which are wanted). Features are
        computed for every window (the decoder's input; a mel spectrogram, not an encoder
        pass)."""
        feats = self.tr.features(self.audio, windows)
        got = [self._get(tuple(w.spans)) for w in windows]
        todo = [j for j, r in enumerate(got) if r is None]
        self.encoded.update(tuple(windows[j].spans) for j in todo)
        self.reused += len(windows) - len(todo)
        if len(todo) == len(windows):
            rows = self.tr.rows(feats)
        else:
            kept = next(r for r in got if r is not None)
            rows = np.empty((len(windows), *kept.shape), kept.dtype)
            if todo:
                rows[todo] = self.tr.rows(feats[todo])
            for j, r in enumerate(got):
                if r is not None:
                    rows[j] = r
        if keep:
            self.keep(windows, rows)
        return feats, rows

    def keep(self, windows: Sequence[Window], rows: np.ndarray,
             wanted: Collection[tuple[Span, ...]] = ()) -> None:
        """Keeps the rows of ``windows`` of one span (``rows``: theirs, in order), as the most
        recently used; those whose spans are in ``wanted`` are dropped last, until met
        again."""
        for w, r in zip(windows, rows):
            key = tuple(w.spans)
            if len(key) != 1:
                continue
            if key in wanted:
                self._wanted.add(key)
            if key in self._rows:
                self._rows.move_to_end(key)
                continue
            self._rows[key] = r.copy()  # a view would hold its whole batch
            while sum(x.nbytes for x in self._rows.values()) > self.kept_bytes:
                old = next((k for k in self._rows if k not in self._wanted),
                           next(iter(self._rows)))
                del self._rows[old]
                self._wanted.discard(old)

    def _get(self, key: tuple[Span, ...]) -> np.ndarray | None:
        r = self._rows.get(key)
        if r is not None:
            self._rows.move_to_end(key)
            self._wanted.discard(key)  # met: its known use served
        return r
