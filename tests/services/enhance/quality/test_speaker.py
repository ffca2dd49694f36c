"""Speaker embedding with Resemblyzer's weights through our loader, and the multi_speaker check
on recordings with known speakers (pocketsphinx-testdata: one LibriVox reader, another speaker)."""

from __future__ import annotations

import numpy as np
import pytest

from services.enhance.quality.mel import MelSpec
from services.enhance.quality.speaker import SpeakerEncoder, consistency, partial_slices

THRESHOLD = 0.84  # the default ONSEI_QUALITY_SPEAKER_THRESHOLD


def test_mel_matches_the_reference_slaney_filterbank() -> None:
    torchaudio = pytest.importorskip("torchaudio")
    import torch

    x = torch.from_numpy(np.random.default_rng(0).standard_normal((2, 16000)).astype(np.float32))
    ours = MelSpec(16000, 400, 160, 40)(x)
    ref = torchaudio.transforms.MelSpectrogram(
        16000, n_fft=400, hop_length=160, n_mels=40, norm="slaney", mel_scale="slaney",
        pad_mode="constant")(x).transpose(1, 2)
    assert ours.shape == ref.shape == (2, 101, 40)
    assert torch.allclose(ours, ref, rtol=1e-3, atol=1e-4)


def test_partials_follow_resemblyzer() -> None:
    assert partial_slices(16000) == [(0, 160)]  # shorter than a partial: one, zero-padded
    s = partial_slices(10 * 16000)  # 1.3 partials a second, 77 frames apart
    assert s[0] == (0, 160) and s[1] == (77, 237) and all(b - a == 160 for a, b in s)
    assert s[-1][1] * 160 >= 10 * 16000 * 0.9


def test_consistency_needs_two_partials_a_side() -> None:
    e = np.eye(4, dtype=np.float32)
    assert consistency(e[:3]) is None
    same = np.tile(e[:1], (6, 1))
    assert consistency(same) == pytest.approx(1.0)
    turn = np.concatenate([np.tile(e[:1], (3, 1)), np.tile(e[1:2], (3, 1))])
    assert consistency(turn) == pytest.approx(0.0, abs=1e-6)



def test_two_speakers_are_flagged_one_speaker_is_not(sphinx_voices) -> None:
    gap = np.zeros(4800, np.float32)
    libri, cards = sphinx_voices["librivox"], sphinx_voices["cards"]
    single = [np.concatenate([libri[i], gap, libri[i + 1]]) for i in range(3)]
    double = [np.concatenate([libri[i], gap, cards[i + 2]]) for i in range(3)]
    scores = SpeakerEncoder().score(single + double)
    cons = [s.consistency for s in scores]
    print("single", cons[:3], "two", cons[3:])
    assert all(c is not None for c in cons)
    assert all(c >= THRESHOLD for c in cons[:3])
    assert all(c < THRESHOLD for c in cons[3:])
    emb = np.stack([s.embedding for s in scores])
    assert emb.shape == (6, 256) and np.allclose(np.linalg.norm(emb, axis=1), 1.0, atol=1e-5)
    # The same reader's segments are closer to each other than to a mix with another voice.
    assert float(emb[0] @ emb[1]) > float(emb[3] @ emb[0]) - 0.1


def test_silence_inside_a_segment_does_not_split_it(sphinx_voices) -> None:
    libri = sphinx_voices["librivox"]
    pause = np.zeros(3 * 16000, np.float32)  # a 3 s pause (the ASR merge gap)
    [s] = SpeakerEncoder().score([np.concatenate([libri[0], pause, libri[2]])])
    assert s.consistency is not None and s.consistency >= THRESHOLD
