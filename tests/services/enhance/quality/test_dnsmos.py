"""DNSMOS: the reference's windows and scores, batched, on onnxruntime (CPU) and the torch port (CUDA)."""

from __future__ import annotations

import numpy as np
import pytest

from bench.speechgen import add_noise
from services.enhance.quality.dnsmos import _P_OVR, WINDOW, Dnsmos, _port, _torch_runner, windows
from services.enhance.quality.weights import dnsmos_model


def test_windows_tile_the_clip_or_slide_like_the_reference() -> None:
    x = np.arange(30 * 16000, dtype=np.float32) / 1e7
    tiled = windows(x)
    assert tiled.shape == (4, WINDOW)
    assert tiled[0, 0] == x[0] and tiled[-1, -1] == x[-1]  # first and last sample covered
    assert windows(x, 1.0).shape == (21, WINDOW)  # the reference: floor(30 - 9.01) + 1
    short = windows(np.ones(16000, np.float32))  # 1 s: repeated to fill one window
    assert short.shape == (1, WINDOW) and short.min() == 1.0


def test_batched_scores_equal_the_reference_loop(speech) -> None:
    """Our batched run with a 1 s hop gives the reference's numbers: one window at a time,
    polynomial per window, mean over windows."""
    clip = np.concatenate(speech[:2])
    d = Dnsmos(hop_seconds=1.0)
    [ours] = d.score([clip, speech[2]])[:1]
    per_window = [d.raw(w[None])[0] for w in windows(clip, 1.0)]
    ref_ovrl = float(np.mean([_P_OVR(r[2]) for r in per_window]))
    assert ours.ovrl == pytest.approx(ref_ovrl, abs=1e-4)


def test_clean_speech_scores_above_the_same_speech_at_0_db(speech) -> None:
    clean = np.concatenate(speech)
    noisy = 0.5 * add_noise(clean, 0.0)
    c, n = Dnsmos().score([clean, noisy])
    print(f"clean {c} / 0 dB {n}")
    assert c.ovrl > n.ovrl + 0.5 and c.bak > n.bak + 1.0
    assert 1.0 <= n.ovrl < c.ovrl <= 5.0


def test_torch_port_equals_onnxruntime(speech) -> None:
    """The CUDA path's network (run here on CPU) gives onnxruntime's outputs."""
    wins = np.concatenate([windows(speech[0]), windows(0.5 * add_noise(speech[1], 0.0))])
    ref = Dnsmos(batch=2).raw(wins)
    ours = _torch_runner(_port(dnsmos_model()), "cpu")(wins)
    assert np.abs(ours - ref).max() < 1e-4
