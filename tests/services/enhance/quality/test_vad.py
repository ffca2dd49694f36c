"""The speech-fraction VAD's torch port (what a GPU node runs) against faster-whisper's ONNX
model in onnxruntime (what a CPU runs): the same probabilities per window, batched or not."""

from __future__ import annotations

import numpy as np
import pytest

from services.enhance.quality import prosody as P
from services.enhance.quality.vad import SileroTorch, SpeechFraction, frame_padded

SR = 16000


@pytest.fixture(scope="module")
def port() -> SpeechFraction:
    vad = SpeechFraction("cpu", port=True)
    vad.load()
    return vad


def _signals(speech) -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    t = np.arange(4 * SR) / SR
    return [*speech[:3], rng.normal(0, 0.1, 3 * SR).astype(np.float32),
            np.sign(np.sin(2 * np.pi * 220 * t)).astype(np.float32),
            np.zeros(6 * SR, np.float32), speech[0][:700], np.zeros(0, np.float32)]


def test_port_gives_onnxruntime_probabilities(speech) -> None:
    import torch
    from faster_whisper.vad import get_vad_model

    net, onnx = SileroTorch(), get_vad_model()
    for x in _signals(speech):
        framed = frame_padded(x)
        if framed.size == 0:
            continue
        want = np.asarray(onnx(framed.copy())).reshape(-1)
        got = net.probs(torch.from_numpy(framed)[None])[0].numpy()
        assert got.shape == want.shape and np.abs(got - want).max() < 1e-4


def test_batched_fractions_equal_one_at_a_time(speech, port: SpeechFraction) -> None:
    xs = _signals(speech)
    batched = port(xs)
    assert batched == pytest.approx([P.speech_fraction(x) for x in xs], abs=1e-9)
    assert batched == pytest.approx([port([x])[0] for x in xs], abs=1e-9)
    assert min(batched[:3]) > 0.6 and max(batched[3:]) < 0.05
    assert port([]) == [] and port([np.zeros(0, np.float32)]) == [0.0]


def test_cpu_keeps_the_onnx_path() -> None:
    assert not SpeechFraction("cpu").port and SpeechFraction("cuda").port
