"""bench.wild.speakers' asr-line cache: a line is served only to the asr code that wrote it."""

from __future__ import annotations

import hashlib
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

import bench.wild.speakers as bench
from services.records import AsrLine


class _Stage:
    def __init__(self) -> None:
        self.calls = 0

    def transcribe_file(self, name: str, audio: np.ndarray) -> SimpleNamespace:
        self.calls += 1
        return SimpleNamespace(line=AsrLine(key=name, status="ok", duration=audio.size / 16000))


def test_a_line_cached_by_other_asr_code_is_not_served(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bench, "CACHE", tmp_path)
    conv = bench.Conversation("call", np.ones(16000, np.float32), [])
    digest = hashlib.sha256(conv.audio.tobytes()).hexdigest()[:16]
    # a line keyed by the audio alone (or by another version): from some other asr
    (tmp_path / f"asr-{digest}.json").write_text(AsrLine(key="stale", status="ok").to_json())
    (tmp_path / f"asr-{digest}-000000000000.json").write_text(
        AsrLine(key="stale", status="ok").to_json())
    stage = _Stage()
    first = bench.asr_line(conv, [stage])
    assert first.key == "call" and stage.calls == 1  # type: ignore[attr-defined]
    again = bench.asr_line(conv, [stage])
    assert again.key == "call" and stage.calls == 1  # type: ignore[attr-defined]


def test_the_version_follows_the_asr_code_and_settings(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    import services.asr

    (tmp_path / "__init__.py").write_text("")
    (tmp_path / "words.py").write_text("RUN_ON = True\n")
    monkeypatch.setattr(services.asr, "__file__", str(tmp_path / "__init__.py"))
    before = bench.asr_version()
    assert before == bench.asr_version()
    (tmp_path / "words.py").write_text("RUN_ON = False\n")
    changed = bench.asr_version()
    assert changed != before
    monkeypatch.setattr(bench, "ASR_MODEL", "bundled:whisper-tiny")
    assert bench.asr_version() != changed
