"""ASR fixtures: the real offline model (bundled Whisper base, int8, CPU) loaded once per session,
test speech generated once, and one shard run through the executor once; most tests read that
run's JSONL lines."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from fixtures.speech_corpus import EN_SENTENCES, ES_SENTENCES, JA_SENTENCES
from fixtures.speechgen import concat, make_shard, silence, synth, wav_bytes
from services.stages import PIPELINE
from tests.system_packages import ESPEAK, require

SR = 16000
MODEL = os.environ.get("ONSEI_TEST_ASR_MODEL", "bundled:whisper-base")
EN_TEST = EN_SENTENCES[3:9]  # avoid the compound words Whisper spells as one ("seashells")


def _model_cache() -> str:
    return os.environ.get("ONSEI_TEST_MODEL_CACHE", str(Path.home() / ".cache/onsei/models"))


def asr_settings(tmp: Path, **overrides):
    from services.asr.settings import AsrSettings

    base = {"input_url": str(tmp / "raw"), "output_url": str(tmp / "out"),
            "scratch_dir": str(tmp / "scratch"), "model_cache": _model_cache(),
            "asr_model": MODEL, "asr_device": "cpu", "asr_compute_type": "int8",
            "asr_batch_size": 8}
    base.update(overrides)
    return AsrSettings(**base)


def _noise(seconds: float, seed: int = 0) -> np.ndarray:
    return (np.random.default_rng(seed).normal(0, 0.1, int(seconds * SR))).astype(np.float32)


def _chord(seconds: float) -> np.ndarray:
    t = np.arange(int(seconds * SR)) / SR
    return (0.2 * np.sin(2 * np.pi * 440 * t) + 0.2 * np.sin(2 * np.pi * 554.37 * t)).astype(
        np.float32)


class Calls:
    """A CTranslate2 Whisper whose calls are counted by name."""

    def __init__(self, model: Any) -> None:
        self._model, self.calls = model, {}

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._model, name)
        if not callable(attr):
            return attr

        def counted(*a: Any, **kw: Any) -> Any:
            self.calls[name] = self.calls.get(name, 0) + 1
            return attr(*a, **kw)

        return counted


@dataclass
class LongFile:
    audio: np.ndarray
    speech: list[tuple[float, float]] = field(default_factory=list)  # where each sentence is


def _long_file(target_seconds: float = 120.0) -> LongFile:
    """~2 minutes (past the 90 s language-ID head): English sentences with pauses from 0.4 s to
    8 s (about half silence). Minutes of two voices: test_longform.py."""
    rng = np.random.default_rng(1)
    cache = {s: synth(s) for s in EN_SENTENCES}
    parts, speech, t = [silence(1.0)], [], 1.0
    i = 0
    while t < target_seconds - 10:
        a = cache[EN_SENTENCES[i % len(EN_SENTENCES)]]
        speech.append((t, t + a.size / SR))
        pause = float(rng.choice([0.4, 0.8, 1.5, 4.0, 8.0]))
        parts += [a, silence(pause)]
        t += a.size / SR + pause
        i += 1
    return LongFile(np.concatenate(parts), speech)


@dataclass
class Corpus:
    members: dict[str, dict[str, bytes]]
    en_reference: str
    long: LongFile


@pytest.fixture(scope="session")
def corpus() -> Corpus:
    require(ESPEAK)
    en = concat([synth(s) for s in EN_TEST], pause=0.6)
    ja = concat([synth(s, voice="ja", speed=130) for s in JA_SENTENCES[:3]], pause=0.6)
    es = concat([synth(s, voice="es") for s in ES_SENTENCES[:2]], pause=0.6)
    long = _long_file()
    members: dict[str, dict[str, bytes]] = {
        "en": {"wav": wav_bytes(en), "json": b'{"source": "test"}'},
        "corrupt": {"wav": b"RIFF\x00\x00\x00\x00WAVEfmt garbage" + bytes(range(256)) * 4},
        "ja": {"flac": _flac(ja)},
        "empty": {"flac": b""},
        "es": {"wav": wav_bytes(es)},
        "silence": {"wav": wav_bytes(silence(10.0))},
        "noise": {"wav": wav_bytes(_noise(10.0))},
        "chord": {"wav": wav_bytes(_chord(10.0))},
        "textonly": {"txt": b"no audio here"},
        "tiny": {"wav": wav_bytes(silence(0.05))},
        "long": {"wav": wav_bytes(long.audio)},
    }
    return Corpus(members, " ".join(EN_TEST), long)


def _flac(audio: np.ndarray) -> bytes:
    from common.shards.audio import flac_bytes

    return flac_bytes(audio, SR)


@pytest.fixture(scope="session")
def asr_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("asr")


@pytest.fixture(scope="session")
def asr_stage(asr_root: Path):
    """The real stage with its model, loaded once for the whole session."""
    from services.asr.stage import AsrStage

    stage = AsrStage(asr_settings(asr_root))
    stage.load()
    return stage


@dataclass
class ShardRun:
    lines: list[dict]
    by_key: dict[str, dict]
    record: dict
    raw: str
    settings: object


@pytest.fixture(scope="session")
def shard_run(asr_stage, corpus: Corpus, asr_root: Path) -> ShardRun:
    """Shard 7 through the executor (fetch, process, publish, done record), once."""
    from common.stages.engine import Engine

    tmp = asr_root
    settings = asr_stage.settings
    make_shard(tmp / "raw" / settings.shard_name(7), corpus.members)
    outcome = Engine(settings, PIPELINE, asr_stage).run(7)
    assert outcome.record is not None
    raw = (tmp / "out" / "asr" / "shard-000007.jsonl").read_text(encoding="utf-8")
    lines = [json.loads(x) for x in raw.splitlines()]
    return ShardRun(lines, {x["key"]: x for x in lines}, outcome.record, raw, settings)
