"""Spotify's basic-pitch multi-pitch network (ICASSP 2022, ``nmp.onnx``) run with onnxruntime,
for the overlap experiment of ``research/wild/overlap_multipitch.py``.

The weights ship in the ``basic-pitch`` wheel, whose declared dependencies pull tensorflow on
Linux; so the wheel is fetched without them (``pip download --no-deps basic-pitch==0.4.0``) into
the bench cache and only ``nmp.onnx`` is read out of it. The input contract is the package's
``inference.py``: mono at 22050 Hz, windows of 43844 samples, 30 output frames (of 256 samples)
shared by neighbouring windows, half of them dropped on each side, the audio led by half that
overlap of zeros. Outputs per frame (86.13 per s): ``contour`` (264 bins, 3 per semitone from
27.5 Hz) and ``note`` (88 semitones).
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np

from fixtures.wheels import fetch_wheel

SR = 22050
HOP = 256
WINDOW = 2 * SR - HOP  # 43844 samples
OVERLAP = 30  # frames
STRIDE = WINDOW - OVERLAP * HOP
FPS = SR / HOP
BASE = 27.5  # Hz of contour bin 0
PER_SEMITONE = 3
CACHE = Path.home() / ".cache/onsei/bench/basic_pitch"
MEMBER = "basic_pitch/saved_models/icassp_2022/nmp.onnx"


def model_bytes() -> bytes:
    """``nmp.onnx`` out of the basic-pitch wheel (fetched without dependencies if absent)."""
    wheel = fetch_wheel("basic-pitch==0.4.0", CACHE)
    if wheel is None:
        raise RuntimeError("basic-pitch 0.4.0's wheel cannot be fetched (no registry)")
    with zipfile.ZipFile(wheel) as z:
        return z.read(MEMBER)


def session(threads: int = 1) -> object:
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    return ort.InferenceSession(model_bytes(), opts, providers=["CPUExecutionProvider"])


def posteriorgrams(sess: object, x16k: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(contour ``[frames, 264]``, note ``[frames, 88]``) of a 16 kHz clip, as basic-pitch's
    ``run_inference`` computes them."""
    from common.shards.audio import resample

    x = resample(x16k, 16000, SR)
    n = x.size
    x = np.concatenate([np.zeros(OVERLAP * HOP // 2, np.float32), x])
    starts = range(0, x.size, STRIDE)
    wins = np.zeros((len(starts), WINDOW, 1), np.float32)
    for i, s in enumerate(starts):
        seg = x[s:s + WINDOW]
        wins[i, :seg.size, 0] = seg
    contour, note = sess.run(  # type: ignore[attr-defined]
        ["StatefulPartitionedCall:0", "StatefulPartitionedCall:1"],
        {"serving_default_input_2:0": wins})
    keep = int(np.floor(n * FPS / SR))
    half = OVERLAP // 2

    def unwrap(a: np.ndarray) -> np.ndarray:
        a = a[:, half:-half, :]
        out: np.ndarray = a.reshape(-1, a.shape[-1])[:keep]
        return out

    return unwrap(contour), unwrap(note)
