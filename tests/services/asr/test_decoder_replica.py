"""On a CPU the asr stage decodes on a second model replica of its own threads: beam search over
a few rows runs there, over more on the first replica's cores; the encoder and language ID stay
on the first, and the texts are those of one replica doing both."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from fixtures.speechgen import concat, silence, synth
from tests.services.asr.conftest import EN_TEST, Calls


@pytest.fixture(scope="module")
def speech() -> np.ndarray:
    return concat([silence(0.5), synth(EN_TEST[0]), silence(0.6), synth(EN_TEST[1]),
                   silence(0.5)])


def test_the_stage_loads_a_decoder_replica_on_its_threads(asr_stage) -> None:
    import ctranslate2

    loaded = asr_stage._loaded
    assert isinstance(loaded.decoder, ctranslate2.models.Whisper)
    assert loaded.decoder.device == "cpu"
    assert loaded.decoder.compute_type == loaded.model.model.compute_type
    # two files in flight on a CPU (the default): a replica each, so their beam searches run
    # side by side instead of queueing for one thread
    assert loaded.decoder.num_workers == 2


def test_no_replica_when_set_to_zero_or_not_asked_for(tmp_path) -> None:
    from services.whisper.model import load_model
    from tests.services.asr.conftest import asr_settings

    assert load_model(asr_settings(tmp_path, asr_cpu_decoder_threads=0), "cpu",
                      decoder=True).decoder is None
    # enhance's fidelity check and the bench's peer load one replica only
    assert load_model(asr_settings(tmp_path), "cpu").decoder is None


def test_a_decoder_replica_per_file_in_flight(tmp_path) -> None:
    from services.asr.stage import AsrStage
    from tests.services.asr.conftest import asr_settings

    for files in (1, 3):
        stage = AsrStage(asr_settings(tmp_path, asr_files_in_flight=files))
        stage.load()
        assert stage._loaded is not None and stage._loaded.decoder.num_workers == files


@pytest.fixture
def counted(asr_stage) -> Iterator[tuple[Any, Calls, Calls]]:
    """The stage's model with both replicas' calls counted: (model, first, second); the model
    is given back as it was."""
    loaded = asr_stage._loaded
    first, second = Calls(loaded.model.model), Calls(loaded.decoder)
    loaded.model.model = first
    try:
        yield loaded.model, first, second
    finally:
        loaded.model.model = first._model


def test_beam_search_runs_on_the_replica_with_the_same_texts(asr_stage, counted,
                                                               speech) -> None:
    from services.asr.batched import ClipTranscriber

    model, first, second = counted
    two = ClipTranscriber(model, asr_stage.settings, second)
    one = ClipTranscriber(model, asr_stage.settings)
    feats = two.features(speech, [_Whole(speech.size)])
    rows = two.rows(feats)
    assert second.calls == {} and first.calls.get("encode") == 1
    with_replica = two.transcribe(feats, "en", rows)
    assert second.calls.get("generate") == 1 and "generate" not in first.calls
    alone = one.transcribe(feats, "en", rows)
    assert first.calls.get("generate") == 1
    assert with_replica[0].text and with_replica[0].text == alone[0].text
    assert with_replica[0].avg_logprob == pytest.approx(alone[0].avg_logprob, abs=1e-4)


def test_a_call_of_more_rows_than_the_replica_takes_runs_on_every_core(asr_stage, counted,
                                                                       speech) -> None:
    from services.asr.batched import REPLICA_ROWS, ClipTranscriber

    model, first, second = counted
    tr = ClipTranscriber(model, asr_stage.settings, second)
    feats = tr.features(speech, [_Whole(speech.size)] * (REPLICA_ROWS + 1))
    texts = tr.transcribe(feats, "en", tr.rows(feats))
    assert first.calls.get("generate") == 1 and "generate" not in second.calls
    assert len({t.text for t in texts}) == 1 and texts[0].text


class _Whole:
    """A window that is the whole clip (batched.Window)."""

    def __init__(self, n: int) -> None:
        self.n = n

    def audio(self, audio: np.ndarray) -> np.ndarray:
        return audio[:self.n]

    def frames(self, hop: int) -> int:
        return self.n // hop
