"""Session fixtures: one small random NeuCodec directory, loaded once through our loader."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from unittest import mock

import numpy as np
import pytest

from fixtures.factories.neucodec import build_small_neucodec
from tests.conftest import built_once


@pytest.fixture(scope="session")
def neucodec_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return built_once(tmp_path_factory, "neucodec", build_small_neucodec)


def _no_network(*_a, **_k):
    raise AssertionError("the loader tried to reach the network")


@pytest.fixture(scope="session")
def codec(neucodec_dir: Path):
    """Loaded by our loader with every outbound connection refused: a dir never needs the hub."""
    from services.tokenize.loader import load_codec

    real_connect = socket.socket.connect

    def connect(self, addr):
        host = addr[0] if isinstance(addr, tuple) else addr
        if isinstance(host, str) and not host.startswith(("127.", "::1", "localhost", "/")):
            _no_network()
        return real_connect(self, addr)

    with mock.patch.object(socket.socket, "connect", connect), \
            mock.patch.object(socket, "create_connection", _no_network):
        return load_codec(neucodec_dir, "neucodec", "cpu")


def tone(seconds_or_samples: float, sr: int, seed: int = 0) -> np.ndarray:
    n = seconds_or_samples if isinstance(seconds_or_samples, int) else int(seconds_or_samples * sr)
    rng = np.random.default_rng(seed)
    t = np.arange(n) / sr
    return (0.3 * np.sin(2 * np.pi * (150 + 50 * seed) * t)
            + 0.02 * rng.standard_normal(n)).astype(np.float32)


def passing_quality(**fields: object) -> dict:
    """A sidecar's quality block that passes every default rule, with ``fields`` added."""
    return {"dnsmos_before": {"sig": 2.0, "bak": 1.5, "ovrl": 1.6},
            "dnsmos_after": {"sig": 3.3, "bak": 4.0, "ovrl": 2.9},
            "dnsmos_delta": {"sig": 1.3, "bak": 2.5, "ovrl": 1.3},
            "speaker_consistency": None, "multi_speaker": False, "fidelity_cer": None,
            "restoration_changed_text": None, "speech_fraction": 0.8, **fields}


def write_enhanced_tar(path: Path, segments: list[tuple[str, float, str]],
                       extra: dict[str, dict[str, bytes]] | None = None,
                       quality: dict[str, dict] | None = None) -> Path:
    """An enhanced shard as the enhance stage writes it: {key}_{idx:04d}.flac (24 kHz) + .json;
    ``quality``: the sidecar's quality block, by key."""
    from common.shards.audio import flac_bytes
    from common.shards.tar import ShardWriter

    with ShardWriter(path) as w:
        for i, (key, seconds, text) in enumerate(segments):
            audio = tone(seconds, 24_000, seed=i)
            meta = {"text": text, "language": "en", "source_key": key.rsplit("_", 1)[0],
                    "start": 0.0, "end": seconds, "duration_seconds": round(seconds, 3)}
            if quality and key in quality:
                meta["quality"] = quality[key]
            w.write(key, {"flac": flac_bytes(audio, 24_000),
                          "json": json.dumps(meta).encode()})
        for key, files in (extra or {}).items():
            w.write(key, files)
    return path
