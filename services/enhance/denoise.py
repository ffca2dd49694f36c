"""Offline-capable backend: RNNoise (a small GRU denoiser, weights compiled into ``pyrnnoise``'s
``librnnoise.so``), 48 kHz in and out, CPU only, no network.

We call the C library directly through ctypes: the ``pyrnnoise`` Python wrapper pulls in an
ffmpeg filter-graph stack we do not need, and a fresh state per row keeps rows independent.
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from services.enhance.backend import Backend, EnhancerUnavailable
from services.enhance.settings import EnhanceSettings

FRAME = 480  # 10 ms at 48 kHz: RNNoise's fixed frame
INT16 = 32768.0
DELAY = 2 * FRAME


class _Lib:
    _lock = threading.Lock()
    _lib: ctypes.CDLL | None = None

    @classmethod
    def get(cls) -> ctypes.CDLL:
        with cls._lock:
            if cls._lib is None:
                spec = importlib.util.find_spec("pyrnnoise")  # locates without importing it
                if spec is None or not spec.submodule_search_locations:
                    raise EnhancerUnavailable(
                        "ONSEI_ENHANCE_BACKEND=rnnoise needs the `pyrnnoise` package "
                        "(pip install 'onsei[enhance]'), or set ONSEI_ENHANCE_BACKEND=none")
                path = Path(next(iter(spec.submodule_search_locations))) / "librnnoise.so"
                lib = ctypes.CDLL(str(path))
                lib.rnnoise_create.argtypes = [ctypes.c_void_p]
                lib.rnnoise_create.restype = ctypes.c_void_p
                lib.rnnoise_destroy.argtypes = [ctypes.c_void_p]
                lib.rnnoise_get_frame_size.restype = ctypes.c_int
                lib.rnnoise_process_frame.argtypes = [
                    ctypes.c_void_p, ctypes.POINTER(ctypes.c_float), ctypes.POINTER(ctypes.c_float)]
                lib.rnnoise_process_frame.restype = ctypes.c_float
                if lib.rnnoise_get_frame_size() != FRAME:
                    raise EnhancerUnavailable("librnnoise has an unexpected frame size")
                cls._lib = lib
            return cls._lib


def rnnoise_denoise(audio: np.ndarray, lib: ctypes.CDLL | None = None) -> np.ndarray:
    """Denoise mono float32 audio at 48 kHz with a fresh RNNoise state; same length out,
    aligned with the input (RNNoise's one-frame delay removed)."""
    lib = lib or _Lib.get()
    n = audio.size
    # RNNoise's output lags its input by DELAY (measured: two frames of analysis/synthesis
    # overlap); extra zero frames flush it. The buffer is processed in place, frame by frame.
    frames = -(-n // FRAME) + DELAY // FRAME
    buf = np.zeros(frames * FRAME, dtype=np.float32)
    buf[:n] = np.clip(audio, -1.0, 1.0) * INT16
    state = lib.rnnoise_create(None)
    try:
        base = buf.ctypes.data
        step = FRAME * 4
        ptr_t = ctypes.POINTER(ctypes.c_float)
        for i in range(frames):
            p = ctypes.cast(base + i * step, ptr_t)
            lib.rnnoise_process_frame(state, p, p)
    finally:
        lib.rnnoise_destroy(state)
    return (buf[DELAY:DELAY + n] / INT16).astype(np.float32)


class RNNoiseBackend(Backend):
    name = "rnnoise"
    in_rate = 48000
    out_rate = 48000
    hop = FRAME

    def __init__(self, settings: EnhanceSettings | None = None) -> None:
        self._lib: ctypes.CDLL | None = None
        self._pool: ThreadPoolExecutor | None = None

    def load(self) -> None:
        if self._lib is None:
            self._lib = _Lib.get()
            # ctypes drops the GIL inside each C call, so rows run in parallel on threads.
            self._pool = ThreadPoolExecutor(max(1, len(os.sched_getaffinity(0))),
                                            thread_name_prefix="rnnoise")

    def run(self, prepared: np.ndarray) -> np.ndarray:
        self.load()
        assert self._pool is not None
        return np.stack(list(self._pool.map(lambda r: rnnoise_denoise(r, self._lib), prepared)))

    def info(self) -> dict[str, Any]:
        try:
            from importlib.metadata import version

            v = version("pyrnnoise")
        except Exception:  # noqa: BLE001 - a version string is best effort
            v = "unknown"
        return {"enhancer": "rnnoise", "enhancer_version": f"pyrnnoise-{v}"}
