"""DNSMOS: the reference's windows and scores, batched, on onnxruntime (CPU) and the torch port
(CUDA)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from fixtures.speechgen import add_noise
from services.enhance.quality.dnsmos import (
    _P_OVR,
    FRAME,
    WINDOW,
    Dnsmos,
    _port,
    _torch_runner,
    pieces,
    windows,
)
from services.enhance.quality.onnxpatch import free_length
from services.enhance.quality.weights import dnsmos_model

AGREEMENT = 0.2  # OVRL, pieces vs the reference's 1 s windows (docs/quality.md: measured)
SPREAD_AGREEMENT = 0.1  # the default's spread 9.01 s windows vs the reference


def test_reference_windows_and_pieces() -> None:
    x = np.arange(30 * 16000, dtype=np.float32) / 1e7
    assert windows(x, 1.0).shape == (21, WINDOW)  # the reference: floor(30 - 9.01) + 1
    short = windows(np.ones(16000, np.float32))  # 1 s: repeated to fill one window
    assert short.shape == (1, WINDOW) and short.min() == 1.0
    spread = windows(x)  # the default: the fewest windows covering 30 s, first and last flush
    assert spread.shape == (4, WINDOW) and spread[0][0] == x[0] and spread[-1][-1] == x[-1]
    ps = pieces(x)  # the fewest pieces <= 9.01 s, whole frames, no overlap
    assert len(ps) == 4 and all(p.size <= WINDOW and p.size % FRAME == 0 for p in ps)
    assert ps[0][0] == x[0] and x.size - FRAME < sum(p.size for p in ps) <= x.size
    assert [p.size for p in pieces(np.ones(2 * 16000 + 50, np.float32))] == [2 * 16000]
    [tiny] = pieces(np.ones(4000, np.float32))  # 0.25 s: repeated to 1 s
    assert tiny.size == 16000


def test_freed_graph_equals_the_wheels_on_its_window(speech) -> None:
    """The length-free rewrite gives the original ONNX model's outputs on 9.01 s windows."""
    import onnxruntime as ort

    wins = np.concatenate([windows(speech[0]), windows(0.5 * add_noise(speech[1], 0.0))])
    original = ort.InferenceSession(str(dnsmos_model()), providers=["CPUExecutionProvider"])
    ref = original.run(None, {"input_1": wins})[0]
    assert np.abs(Dnsmos().raw(wins) - ref).max() < 1e-5
    with pytest.raises(ValueError, match="not the DNSMOS graph"):
        free_length(b"")


@pytest.fixture(scope="module")
def reference(speech) -> tuple[list[np.ndarray], list]:
    """Three clips and their scores with the reference's 1 s windows (computed once)."""
    clips = [np.concatenate(speech), speech[0], 0.5 * add_noise(np.concatenate(speech), 5.0)]
    return clips, Dnsmos(hop_seconds=1.0).score(clips)


@pytest.mark.parametrize("pieces,bound", [(False, SPREAD_AGREEMENT), (True, AGREEMENT)],
                         ids=["default", "pieces"])
def test_scores_agree_with_the_reference_windows(reference, pieces, bound) -> None:
    clips, ref = reference
    ours = Dnsmos(pieces=pieces).score(clips)
    diffs = [abs(a.ovrl - b.ovrl) for a, b in zip(ours, ref)]
    print("OVRL ours - reference", diffs)
    assert max(diffs) < bound


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
    port = _torch_runner(_port(dnsmos_model()), "cpu")
    wins = np.concatenate([windows(speech[0]), windows(0.5 * add_noise(speech[1], 0.0))])
    assert np.abs(port(wins) - Dnsmos(batch=2).raw(wins)).max() < 1e-4
    piece = np.stack(pieces(speech[2]))  # any length, as the freed ONNX graph
    assert piece.shape[1] < WINDOW
    assert np.abs(port(piece) - Dnsmos().raw(piece)).max() < 1e-4


def test_scoring_a_full_batch_holds_one_windows_working_memory() -> None:
    """16 clips (the annotation batch's 8 segments, before and after) scored in a fresh
    process: onnxruntime's arena keeps what its largest call needed, 1.9 GB for 16 windows in
    one call; its peak must not grow with the number of clips scored."""
    script = textwrap.dedent("""
        import resource, numpy as np
        from services.enhance.quality.dnsmos import WINDOW, Dnsmos
        d = Dnsmos(threads=1)
        rng = np.random.default_rng(0)
        d.score([(rng.standard_normal(WINDOW) * 0.05).astype(np.float32)])
        one = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        d.score([(rng.standard_normal(WINDOW) * 0.05).astype(np.float32) for _ in range(16)])
        print(one, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=True, cwd=Path(__file__).resolve().parents[4])
    one, sixteen = map(float, out.stdout.split())
    assert sixteen - one < 150, f"1 clip: {one:.0f} MB peak, 16 clips: {sixteen:.0f} MB"
