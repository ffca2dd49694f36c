"""Speaker labels within a source file: the clustering, the per-file hold in output order, the
spill of held FLAC bytes, and two real readers taking turns coming out as two labels."""

from __future__ import annotations

import numpy as np
import pytest

from fixtures.known_speakers import sphinx_lines
from services.enhance.speakers import (
    DEFAULT_THRESHOLD,
    HeldSegments,
    SpeakerLabeller,
    cluster,
    speaker_label,
)
from tests.system_packages import POCKETSPHINX, missing


def _voices(n: int, per: int, spread: float, seed: int = 0) -> tuple[list, list[int]]:
    """``per`` noisy unit vectors around each of ``n`` random directions, taking turns."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((n, 256))
    out, who = [], []
    for i in range(per):
        for v in range(n):
            e = centres[v] / np.linalg.norm(centres[v]) + spread * rng.standard_normal(256) / 16
            out.append(e / np.linalg.norm(e))
            who.append(v)
    return out, who


def test_two_voices_taking_turns_get_two_labels() -> None:
    embs, who = _voices(2, 5, 0.3)
    labels = cluster(embs)
    assert labels[:2] == [0, 1]  # numbered by first appearance
    assert labels == who


def test_one_voice_gets_one_label_and_edge_cases() -> None:
    embs, _ = _voices(1, 8, 0.3)
    assert cluster(embs) == [0] * 8
    assert cluster([]) == [] and cluster(embs[:1]) == [0]


def test_short_segments_join_the_nearest_long_one() -> None:
    embs, who = _voices(2, 4, 0.3)
    near = embs[1] + 0.3 * np.random.default_rng(5).standard_normal(256) / 16
    mid = embs[0] + embs[1] * 0.9  # between the two voices: it would chain them
    embs += [near / np.linalg.norm(near), mid / np.linalg.norm(mid)]
    parts = [6] * 8 + [1, 1]
    labels = cluster(embs, DEFAULT_THRESHOLD, parts)
    assert labels[:8] == who
    assert labels[8] == 1  # near voice 1: joins it
    assert labels[9] == 2  # near neither (0.73 to voice 0's centroid): a label of its own
    assert cluster(embs, DEFAULT_THRESHOLD, parts, join=0.7)[9] == 0  # a looser join takes it
    assert cluster(embs[-1:], parts=[1]) == [0]  # no long segment: clustered as they are


def test_labeller_holds_a_file_until_the_next_and_keeps_order() -> None:
    out: list[tuple[str, str | None]] = []
    lab = SpeakerLabeller(lambda item, sid: out.append((item, sid)))
    embs, _ = _voices(2, 2, 0.2)  # a, b, a, b
    for i, e in enumerate(embs):
        lab.put("f1", e, f"f1_{i}", parts=6)
    lab.put("f1", None, "f1_x")  # annotation failed: no label, order kept
    assert out == []  # held until the file is complete
    lab.put("f2", embs[0], "f2_0")
    assert [x for x, _ in out] == ["f1_0", "f1_1", "f1_2", "f1_3", "f1_x"]
    assert [s for _, s in out] == ["f1#s0", "f1#s1", "f1#s0", "f1#s1", None]
    lab.flush()
    assert out[-1] == ("f2_0", speaker_label("f2", 0)) and lab.files == 2 and lab.speakers == 3
    lab.flush()  # nothing held: nothing more
    assert len(out) == 6


def test_held_segments_spill_to_disk_and_come_back_whole() -> None:
    held = HeldSegments(max_memory=1000)
    blobs = [bytes([i]) * 700 for i in range(4)]
    tickets = [held.hold(f"seg{i}", b, {"i": i}) for i, b in enumerate(blobs)]
    assert held._spool._rolled  # past max_memory: on disk
    for t, b in zip(tickets, blobs):
        _, flac, meta = held.take(t)
        assert flac == b and meta == {"i": t}
    t = held.hold("again", b"xyz", None)  # empty again: starts over at 0
    assert held.take(t) == ("again", b"xyz", None)
    held.close()


@pytest.fixture(scope="module")
def readers():
    v = sphinx_lines()
    if not v:
        missing(POCKETSPHINX)
    return v


def test_two_real_readers_taking_turns(readers) -> None:
    """pocketsphinx's LibriVox reader and its "cards" speaker, lines alternating (real
    Resemblyzer embeddings): two labels, each reader's lines under one."""
    from services.enhance.quality.speaker import SpeakerEncoder

    lines = [x for pair in zip(readers["librivox"], readers["cards"]) for x in pair]
    scores = SpeakerEncoder().score(lines)
    labels = cluster([s.embedding for s in scores], DEFAULT_THRESHOLD, [s.parts for s in scores])
    assert labels == [0, 1] * 5
    alone = SpeakerEncoder().score(readers["librivox"])
    assert set(cluster([s.embedding for s in alone], parts=[s.parts for s in alone])) == {0}
