"""Speaker labels within a source file: the clustering, the per-file hold in output order, the
spill of held FLAC bytes, and two real readers taking turns coming out as two labels."""

from __future__ import annotations

import numpy as np
import pytest

from fixtures.known_speakers import sphinx_lines
from services.enhance.speakers import (
    DEFAULT_THRESHOLD,
    FUSED,
    RESEMBLYZER,
    HeldSegments,
    SpeakerLabeller,
    cluster,
    fuse,
    label_embedding,
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
    rng = np.random.default_rng(5)
    near = embs[1] + 0.3 * rng.standard_normal(256) / 16
    other = rng.standard_normal(256)  # a third voice, heard only in short turns
    third = [other / np.linalg.norm(other) + 0.3 * rng.standard_normal(256) / 16
             for _ in range(2)]
    embs += [near / np.linalg.norm(near)] + [t / np.linalg.norm(t) for t in third]
    parts = [6] * 8 + [1, 1, 0]
    labels = cluster(embs, DEFAULT_THRESHOLD, parts)
    assert labels[:8] == who
    assert labels[8] == 1  # near voice 1: joins it
    assert labels[9] == labels[10] == 2  # near neither: the short ones' own label, together
    strict = cluster(embs, DEFAULT_THRESHOLD, parts, join_nearest=1.0)  # no short one joins
    assert strict[8] == 2 and strict[9] == strict[10] == 3
    assert cluster(embs[-1:], parts=[1]) == [0]  # no long segment: clustered as they are


def _at(u: np.ndarray, cos: float, seed: int) -> np.ndarray:
    """A unit vector at cosine ``cos`` to unit ``u``."""
    r = np.random.default_rng(seed).standard_normal(u.size)
    r -= (r @ u) * u
    return cos * u + np.sqrt(1 - cos**2) * r / np.linalg.norm(r)


def test_a_short_segment_needs_more_to_join_the_only_cluster() -> None:
    """With one voice among the long segments there is nothing to compare with: a short one at
    0.72 (another voice's short turn through the same noise and restoration) keeps its own
    label, voiced or not (one known voice: it may be the file's other voice); at two voices,
    0.65 to the nearer is enough."""
    one, _ = _voices(1, 4, 0.3)
    u = np.sum(one, axis=0) / np.linalg.norm(np.sum(one, axis=0))
    assert cluster(one + [_at(u, 0.72, 1)], parts=[6] * 4 + [0]) == [0] * 4 + [1]
    assert cluster(one + [_at(u, 0.72, 1)], parts=[6] * 4 + [1]) == [0] * 4 + [1]
    assert cluster(one + [_at(u, 0.85, 1)], parts=[6] * 4 + [0]) == [0] * 5
    two, who = _voices(2, 4, 0.3)
    v = np.sum(two[1::2], axis=0) / np.linalg.norm(np.sum(two[1::2], axis=0))
    assert cluster(two + [_at(v, 0.65, 2)], parts=[6] * 8 + [1]) == who + [1]


def test_a_voice_heard_only_in_short_turns_keeps_its_own_label() -> None:
    """Short turns (one voiced partial each) 0.65 to the nearer of two clusters but much nearer
    one another are a third voice: one label of their own, not the nearer cluster's."""
    two, who = _voices(2, 4, 0.3)
    u = np.sum(two[0::2], axis=0) / np.linalg.norm(np.sum(two[0::2], axis=0))
    rng = np.random.default_rng(7)
    r = rng.standard_normal(256)
    r -= (r @ u) * u
    shorts = []
    for _ in range(3):
        d = r / np.linalg.norm(r) + 0.3 * rng.standard_normal(256) / 16
        d -= (d @ u) * u
        shorts.append(0.65 * u + np.sqrt(1 - 0.65**2) * d / np.linalg.norm(d))
    assert all(0.6 < e @ u < 0.7 for e in shorts) and shorts[0] @ shorts[1] > 0.85
    assert cluster(two + shorts, parts=[6] * 8 + [1] * 3) == who + [2] * 3
    # without the rule (a margin no peer reaches) they join the nearer voice
    assert cluster(two + shorts, parts=[6] * 8 + [1] * 3, peer_margin=2.0) == who + [0] * 3


def _centre(embs: list) -> np.ndarray:
    c = np.sum(embs, axis=0)
    out: np.ndarray = c / np.linalg.norm(c)
    return out


def test_an_unvoiced_turn_among_known_voices_gets_no_label() -> None:
    """A short turn without a voiced partial that joins neither of two voices (0.55 to one,
    below the 0.6 to join) but lies near them gets no label: its embedding cannot say which
    voice it is, and a label of its own would split that voice in two. Far from both (a third
    voice, cosine ~0), or with one voice only, it keeps a label of its own; voiced, too."""
    two, who = _voices(2, 4, 0.3)
    v = _centre(two[1::2])
    near = _at(v, 0.55, 3)
    assert cluster(two + [near], parts=[6] * 8 + [0]) == who + [None]
    assert cluster(two + [near], parts=[6] * 8 + [1]) == who + [2]  # voiced: a label
    assert cluster(two + [near], parts=[6] * 8 + [0], unknown_near=2.0) == who + [2]  # off
    between = _at(_centre([_centre(two[0::2]), v]), 0.78, 4)  # ~0.55 to both
    assert cluster(two + [between], parts=[6] * 8 + [0]) == who + [None]
    far = np.random.default_rng(11).standard_normal(256)
    assert cluster(two + [far / np.linalg.norm(far)], parts=[6] * 8 + [0]) == who + [2]
    one = two[0::2]  # one voice: the turn may be the file's other voice
    assert cluster(one + [near], parts=[6] * 4 + [0]) == [0] * 4 + [1]
    assert cluster(one + [_at(_centre(one), 0.55, 3)], parts=[6] * 4 + [0]) == [0] * 4 + [1]


def test_a_voiced_short_group_counts_as_a_known_voice() -> None:
    """One long voice, a second heard in two voiced short turns (their own label), and an
    unvoiced turn near that group but not grouped with it: two voices are known, so it gets
    none. Without the voiced group it founds a label of its own."""
    one, _ = _voices(1, 4, 0.3)
    rng = np.random.default_rng(9)
    b = rng.standard_normal(256)
    b /= np.linalg.norm(b)
    group = [_at(b, 0.93, 21), _at(b, 0.93, 22)]
    lone = _at(b, 0.72, 23)
    assert group[0] @ group[1] > 0.7 and (lone @ group[0] + lone @ group[1]) / 2 < 0.7
    assert cluster(one + group + [lone], parts=[6] * 4 + [1, 1, 0]) == [0] * 4 + [1, 1, None]
    assert cluster(one + [lone], parts=[6] * 4 + [0]) == [0] * 4 + [1]


def test_noisy_centroids_of_one_voice_are_merged() -> None:
    """Two-partial segments of one voice agree ~0.8 (below a plain 0.88 cut); corrected for
    their noise they are one voice, and two voices ~0.5 apart stay two."""
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((2, 256))
    b = 0.5 * a / np.linalg.norm(a) + np.sqrt(0.75) * b / np.linalg.norm(b)
    out, who = [], []
    for k in range(12):
        centre = a / np.linalg.norm(a) if k % 2 == 0 else b / np.linalg.norm(b)
        e = centre + 0.45 * rng.standard_normal(256) / 16
        out.append(e / np.linalg.norm(e))
        who.append(k % 2)
    x = np.stack(out)
    same = [x[i] @ x[j] for i in range(12) for j in range(i + 2, 12, 2)]
    assert max(same) < DEFAULT_THRESHOLD  # a plain centroid cut would split every segment off
    assert cluster(out, parts=[2] * 12) == who


def test_labeller_leaves_an_unknown_voice_without_a_label() -> None:
    out: list[tuple[str, str | None]] = []
    embs, _ = _voices(2, 2, 0.2)
    near = _at(_centre(embs[1::2]), 0.55, 2)
    for unknown_near, want in ((0.4, None), (2.0, "f#s2")):
        out.clear()
        lab = SpeakerLabeller(lambda item, sid: out.append((item, sid)),
                              unknown_near=unknown_near)
        for i, e in enumerate(embs + [near]):
            lab.put("f", e, f"f_{i}", parts=6 if i < 4 else 0)
        lab.flush()
        assert [s for _, s in out] == ["f#s0", "f#s1", "f#s0", "f#s1", want]
        assert lab.speakers == (2 if want is None else 3)  # the unknown one is no speaker


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


def test_fused_cosines_are_the_mean_of_both_models() -> None:
    (a, b), _ = _voices(2, 1, 0.0)
    (c, d), _ = _voices(2, 1, 0.0, seed=1)
    fa, fb = fuse(a, c[:192] / np.linalg.norm(c[:192])), fuse(b, d[:192] / np.linalg.norm(d[:192]))
    assert fa.shape == (448,) and abs(float(np.linalg.norm(fa)) - 1.0) < 1e-6
    want = (a @ b + (c[:192] @ d[:192]) / np.linalg.norm(c[:192]) / np.linalg.norm(d[:192])) / 2
    assert float(fa @ fb) == pytest.approx(float(want), abs=1e-6)


def test_a_segment_is_labelled_by_both_embeddings_when_it_has_them() -> None:
    from types import SimpleNamespace

    e, cam = np.ones(256) / 16, np.ones(192) / np.sqrt(192)
    alone = SimpleNamespace(speaker_embedding=e, speaker_embedding_campplus=None)
    both = SimpleNamespace(speaker_embedding=e, speaker_embedding_campplus=cam)
    assert label_embedding(alone) is e
    assert np.allclose(label_embedding(both), fuse(e, cam))


def test_the_labeller_takes_its_profiles_values_unless_a_threshold_is_set(monkeypatch) -> None:
    import services.enhance.speakers as sp

    seen: list[dict] = []
    real = sp.cluster
    monkeypatch.setattr(sp, "cluster", lambda *a, **k: seen.append({"t": a[1], **k}) or
                        real(*a, **k))
    embs, _ = _voices(2, 2, 0.2)
    for threshold, profile, want in ((None, FUSED, FUSED.threshold),
                                     (0.9, FUSED, 0.9), (None, RESEMBLYZER, DEFAULT_THRESHOLD)):
        lab = SpeakerLabeller(lambda item, sid: None, threshold, profile=profile)
        for i, e in enumerate(embs):
            lab.put("f", e, i, parts=6)
        lab.flush()
        got = seen.pop()
        assert got["t"] == want
        assert (got["agreement"], got["join"], got["join_nearest"], got["short_threshold"]) == (
            profile.agreement, profile.join, profile.join_nearest, profile.short_threshold)


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


def test_short_real_cuts_never_found_a_third_label(readers) -> None:
    """0.4 s cut from each line of the two readers (no voiced 1.6 s partial), each added alone to
    the two readers' lines: it joins one of the two voices or gets no label (voice unknown),
    never a third label that would split its voice."""
    from services.enhance.quality.speaker import SpeakerEncoder

    enc = SpeakerEncoder()
    lines = enc.score([x for pair in zip(readers["librivox"], readers["cards"]) for x in pair])
    cuts = enc.score([line[int(a * 16000):int((a + 0.4) * 16000)]
                      for voice in ("librivox", "cards") for line in readers[voice]
                      for a in (0.5, 1.0)])
    assert all(c.parts == 0 for c in cuts)
    got = [cluster([s.embedding for s in lines] + [c.embedding],
                   parts=[s.parts for s in lines] + [c.parts])[-1] for c in cuts]
    assert set(got) <= {0, 1, None} and None in got
    assert got[:10] == [0] * 10  # the reader's cuts all join the reader
    alone = [cluster([s.embedding for s in lines] + [c.embedding],
                     parts=[s.parts for s in lines] + [c.parts], unknown_near=2.0)[-1]
             for c in cuts]
    assert 2 in alone  # without the rule some found a third label
