"""A span heard alone is encoded once per file: its rows kept within a bound, those a decode is
known to want dropped last (services/asr/encodings.py). The model is a stand-in here (rows
that name their window); the real model's passes are counted in test_multilingual.py."""

from __future__ import annotations

import numpy as np

from services.asr.encodings import Encodings
from services.asr.windows import Window

ROW = np.zeros((4, 8), np.float32)  # one window's rows: 128 bytes


class Encoder:
    """features: a window's first span start; rows: that value over a row (a pass counted)."""

    def __init__(self) -> None:
        self.passes = 0

    def features(self, audio: np.ndarray, windows: list[Window]) -> np.ndarray:
        return np.array([[w.spans[0][0]] for w in windows], np.float32)

    def rows(self, feats: np.ndarray) -> np.ndarray:
        self.passes += len(feats)
        return np.stack([ROW + f[0] for f in feats])


def one(t: float) -> Window:
    return Window([((t, t + 1.0), 0)])


def encodings(rows: int) -> tuple[Encodings, Encoder]:
    enc = Encoder()
    return Encodings(enc, np.zeros(0, np.float32), kept_bytes=rows * ROW.nbytes), enc


def test_a_span_met_again_is_not_encoded_again_and_gets_its_own_rows() -> None:
    e, enc = encodings(8)
    e.encode([one(1.0), one(2.0)])
    feats, rows = e.encode([one(3.0), one(2.0), one(1.0)])
    assert enc.passes == 3 and e.reused == 2
    assert [float(r[0, 0]) for r in rows] == [3.0, 2.0, 1.0]
    assert [float(f[0]) for f in feats] == [3.0, 2.0, 1.0]
    assert e.encoded[((1.0, 2.0),)] == 1


def test_windows_of_several_spans_are_not_kept() -> None:
    e, enc = encodings(8)
    two = Window([((1.0, 2.0), 0), ((3.0, 4.0), 0)])
    e.encode([two])
    e.encode([Window(list(two.units))])
    assert enc.passes == 2 and e.reused == 0


def test_past_the_bound_the_least_recently_used_goes_first_a_wanted_one_last() -> None:
    e, enc = encodings(2)
    e.encode([one(1.0), one(2.0)])
    e.encode([one(1.0)])  # 1.0 used last: 2.0 is the one to go
    e.encode([one(3.0)])
    assert enc.passes == 3
    e.encode([one(1.0)])
    assert enc.passes == 3
    e.encode([one(2.0)])
    assert enc.passes == 4
    # looked at without keeping, then kept with one of them wanted by a decode to come
    w, enc = encodings(2)
    looked = [one(1.0), one(2.0), one(3.0), one(4.0)]
    _, rows = w.encode(looked, keep=False)
    w.keep(looked, rows, {((1.0, 2.0),)})
    w.encode([one(1.0), one(4.0)])
    assert enc.passes == 4 and w.reused == 2
    w.encode([one(5.0), one(6.0)])  # 1.0 met: no longer wanted, it may go now
    w.encode([one(1.0)])
    assert enc.passes == 7
