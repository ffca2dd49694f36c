"""Music separation ahead of the decode, with random-weight Demucs bags of the released
contract (fixtures/demucs_models.py) loaded through the stage's own loader: blocks that hold
music are replaced by the model's vocals, the others pass bit-identical; every way a model can
be wrong is refused at load with the setting named."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from fixtures.demucs_models import model_file, write_bag
from services.asr.separation import Separator, removed_share, separate
from services.asr.separation_model import SeparationModelError, load_separation_model
from services.asr.settings import AsrSettings

SR = 16000


@pytest.fixture(scope="module")
def bag_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_bag(tmp_path_factory.mktemp("demucs"))


@pytest.fixture(scope="module")
def separator(bag_dir: Path) -> Separator:
    return Separator(load_separation_model(str(bag_dir), "htdemucs", _settings(bag_dir)))


def _settings(tmp: Path, **kw) -> AsrSettings:
    return AsrSettings(input_url=str(tmp / "raw"), output_url=str(tmp / "out"),
                       scratch_dir=str(tmp / "scratch"), model_cache=str(tmp / "cache"), **kw)


def _chords(seconds: float) -> np.ndarray:
    """Three held notes with harmonics, changing every 1.2 s: what the music gate calls music."""
    rng = np.random.default_rng(0)
    t = np.arange(int(1.2 * SR)) / SR
    parts = []
    for _ in range(int(np.ceil(seconds / 1.2))):
        f0s = 220 * 2 ** (rng.choice(24, 3, replace=False) / 12)
        parts.append(sum(np.sin(2 * np.pi * f * h * t) / h for f in f0s for h in (1, 2)))
    return (0.1 * np.concatenate(parts)[:int(seconds * SR)]).astype(np.float32)


def _noise(seconds: float) -> np.ndarray:
    return (0.05 * np.random.default_rng(1).standard_normal(int(seconds * SR))).astype(np.float32)


def test_vocals_keep_the_length_and_come_from_the_model(separator: Separator) -> None:
    x = _chords(3.3)
    v = separator.vocals(x)
    assert v.dtype == np.float32 and v.shape == x.shape
    assert np.isfinite(v).all() and not np.allclose(v, x, atol=1e-3)
    assert separator.rate == 44100 and separator.channels == 2


def test_only_blocks_that_hold_music_are_separated(separator: Separator) -> None:
    clean, music = _noise(30.0), _chords(16.0)  # two blocks: 30 s, then a 16 s tail
    x = np.concatenate([clean, music])
    heard, treated = separate(x, 0.75, separator)
    assert treated == 1 and heard.shape == x.shape
    assert np.array_equal(heard[:clean.size], clean)  # bit-identical where no music is found
    assert not np.allclose(heard[clean.size:], music, atol=1e-3)


def test_gate_zero_separates_every_block(separator: Separator) -> None:
    x = _noise(6.0)
    heard, treated = separate(x, 0.0, separator)
    assert treated == 1 and not np.array_equal(heard, x)
    assert separate(np.zeros(0, np.float32), 0.0, separator)[1] == 0


class _Share:
    """A separator whose vocals are ``keep`` times the block: it takes out (1 - keep)**2."""

    def __init__(self, keep: float) -> None:
        self.keep = keep

    def vocals(self, x: np.ndarray) -> np.ndarray:
        return (self.keep * x).astype(np.float32)


def test_vocals_are_kept_only_where_the_separator_took_enough_out() -> None:
    x = np.concatenate([_noise(30.0), _chords(16.0)])  # two blocks
    heard, treated = separate(x, 0.0, _Share(0.95), 0.01)  # 0.25 % out: clean speech
    assert treated == 0 and np.array_equal(heard, x)
    heard, treated = separate(x, 0.0, _Share(0.5), 0.01)  # 25 % out: a bed
    assert treated == 2 and np.allclose(heard, 0.5 * x)
    assert separate(x, 0.0, _Share(0.95), 0.0)[1] == 2  # 0: every separated block kept
    assert separate(x, 0.75, _Share(0.5), 0.01)[1] == 1  # the held-tone gate still comes first
    assert removed_share(x, 0.5 * x) == pytest.approx(0.25, rel=1e-5)
    assert removed_share(np.zeros(8, np.float32), np.zeros(8, np.float32)) == 0.0


def test_the_released_th_format_loads_as_a_bag_and_as_one_file(tmp_path: Path) -> None:
    d = write_bag(tmp_path / "th", fmt="th", sig="c0ffee00")
    th = model_file(d, "c0ffee00")
    assert th.name.startswith("c0ffee00-") and th.suffix == ".th"  # <signature>-<checksum>.th
    for spec in (str(d), str(th), f"file://{th}"):
        bag = load_separation_model(spec, "htdemucs", _settings(tmp_path))
        assert "vocals" in bag.sources and bag.samplerate == 44100 and len(bag.models) == 1


def test_one_safetensors_file_loads(tmp_path: Path, bag_dir: Path) -> None:
    bag = load_separation_model(str(model_file(bag_dir)), "unused", _settings(tmp_path))
    assert list(bag.sources) == ["drums", "bass", "other", "vocals"]


def test_a_model_without_vocals_is_refused_at_load(tmp_path: Path) -> None:
    d = write_bag(tmp_path / "novox", sources=["drums", "bass", "other", "piano"], fmt="th")
    for spec in (str(d), str(model_file(d))):
        with pytest.raises(SeparationModelError, match="no 'vocals'.*ONSEI_ASR_SEPARATION_MODEL"):
            load_separation_model(spec, "htdemucs", _settings(tmp_path))


def test_missing_and_broken_models_are_refused_at_load(tmp_path: Path, bag_dir: Path) -> None:
    with pytest.raises(SeparationModelError, match="lacks htdemucs.yaml"):
        load_separation_model(str(tmp_path), "htdemucs", _settings(tmp_path))
    for gone in ("nowhere", "955717e8-8726e21a.th"):
        with pytest.raises(SeparationModelError, match=f"{gone} does not exist"):
            load_separation_model(str(tmp_path / gone), "htdemucs", _settings(tmp_path))
    with pytest.raises(SeparationModelError, match="lacks other_name.yaml"):
        load_separation_model(str(bag_dir), "other_name", _settings(tmp_path))
    lost = tmp_path / "lost"
    lost.mkdir()
    (lost / "htdemucs.yaml").write_text("models: ['deadbeef']\n")
    with pytest.raises(SeparationModelError, match="deadbeef"):
        load_separation_model(str(lost), "htdemucs", _settings(tmp_path))
    (lost / "deadbeef.safetensors").write_bytes(b"not a model")
    with pytest.raises(SeparationModelError, match="does not load"):
        load_separation_model(str(lost), "htdemucs", _settings(tmp_path))
    with pytest.raises(SeparationModelError, match="does not load"):
        load_separation_model(str(lost / "htdemucs.yaml"), "htdemucs", _settings(tmp_path))


def test_separation_and_suppression_are_alternatives(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="set one of them"):
        _settings(tmp_path, asr_separation_model=str(tmp_path), asr_music_suppression=True)


def test_the_stage_decodes_the_vocals_where_music_is(tmp_path: Path) -> None:
    from services.asr.stage import AsrStage
    from tests.services.asr.conftest import asr_settings

    th = model_file(write_bag(tmp_path / "th", fmt="th"))  # the setting as the docs give it
    stage = AsrStage(asr_settings(tmp_path, asr_separation_model=str(th)))
    stage.load()
    assert stage._separator is not None and stage.model_info()["separation"] == str(th)
    x = _chords(12.0)
    heard, treated = stage._heard(x)
    assert treated == 1 and heard.shape == x.shape and not np.array_equal(heard, x)
    speech = _speech()
    mix = speech + _chords(speech.size / SR + 1.2)[:speech.size]
    out = stage.transcribe_file("m", mix)  # random vocals: whatever Whisper hears, a line is made
    assert out.line.key == "m" and out.extra["music_blocks"] == 1
    noise = _noise(6.0)
    heard, treated = stage._heard(noise)
    assert treated == 0 and np.array_equal(heard, noise)  # below the gate: bit-identical
    every = AsrStage(asr_settings(tmp_path, asr_separation_model=str(th), asr_music_gate=0.0))
    every._separator = stage._separator  # the gate is the music gate's setting, shared
    assert every._heard(noise)[1] == 1
    every._separator = _Share(0.95)  # took out next to nothing: the source is decoded
    heard, treated = every._heard(noise)
    assert treated == 0 and np.array_equal(heard, noise)
    keep_all = AsrStage(asr_settings(tmp_path, asr_separation_model=str(th), asr_music_gate=0.0,
                                     asr_separation_min_removed=0.0))
    keep_all._separator = _Share(0.95)
    assert keep_all._heard(noise)[1] == 1
    plain = AsrStage(asr_settings(tmp_path))
    assert plain.model_info().get("separation") is None and plain._heard(x)[1] == 0


def _speech() -> np.ndarray:
    """About 8 s of espeak English: one block."""
    from fixtures.speech_corpus import EN_SENTENCES
    from fixtures.speechgen import concat, synth
    from tests.system_packages import ESPEAK, require

    require(ESPEAK)
    x = concat([synth(s) for s in EN_SENTENCES[3:5]], pause=0.6)
    return (0.3 * x / np.abs(x).max()).astype(np.float32)
