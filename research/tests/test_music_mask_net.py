"""The learned mask's numpy network (research/wild/music_mask_net.py): its convolution is the
dilated, same-padded one the torch training used; the transform gives the input back; clean
speech passes the music gate untouched whatever the weights."""

from __future__ import annotations

import numpy as np

from research.wild.music_mask_net import BINS, DILATIONS, SR, MaskNet, _conv, istft, separate, stft
from tests.services.asr.test_music import GATE, speech  # noqa: F401


def test_the_convolution_is_a_dilated_same_padded_one() -> None:
    rng = np.random.default_rng(0)
    h = rng.normal(size=(20, 4)).astype(np.float32)
    w = rng.normal(size=(3, 4, 3)).astype(np.float32)
    b = rng.normal(size=3).astype(np.float32)
    want = np.zeros((20, 3), np.float32) + b
    for t in range(20):
        for j in range(3):
            s = t + 2 * (j - 1)
            if 0 <= s < 20:
                want[t] += w[:, :, j] @ h[s]
    assert np.allclose(_conv(h, w, b, 2), want, atol=1e-4)


def test_the_transform_gives_the_input_back() -> None:
    x = np.random.default_rng(1).normal(0, 0.1, SR * 3 + 77).astype(np.float32)
    assert np.max(np.abs(istft(stft(x), x.size) - x)) < 1e-5


def _net(seed: int = 0) -> MaskNet:
    rng = np.random.default_rng(seed)
    shapes = [(16, BINS, 3), *[(16, 16, 3)] * (len(DILATIONS) - 1), (BINS, 16, 1)]
    return MaskNet(tuple(rng.normal(0, 0.1, s).astype(np.float32) for s in shapes),
                   tuple(np.zeros(s[0], np.float32) for s in shapes))


def test_clean_speech_passes_the_gate_untouched(speech) -> None:  # noqa: F811
    y, blocks = separate(speech, _net(), GATE)
    assert blocks == 0 and np.array_equal(y, speech)
    y, blocks = separate(speech, _net(), 0.0)  # every block treated: the gains change it
    assert blocks == 2 and y.size == speech.size and not np.array_equal(y, speech)
    gains = _net().mask(np.zeros((10, BINS), np.float32))
    assert gains.min() >= 0.1 and gains.max() <= 1.0
