"""Models that return at once, at the real output shapes, for the feed bench: what a stage
costs on the CPU around its model is then all that is left to measure.

Everything outside the network itself stays real: Whisper's log-mel (faster-whisper's
``FeatureExtractor``, 128 bins as large-v3-turbo), Sidon's input staging, NeuCodec's w2v-BERT
filterbank, the annotators' slicing and mels. Work that runs on the device on a GPU node
(the DNSMOS network with its DFT, the speaker LSTM) is the model here.
"""

from __future__ import annotations

import random
from types import SimpleNamespace
from typing import Any

import numpy as np

from services.asr.batched import ClipText, ClipTranscriber

_VOCABULARY = (
    "the of and to in was that it his her with as had for at but not be she by on him which "
    "they were you all this from would so said have one there been what or could when an my "
    "more no if into time very some your out than then about little mother father house "
    "morning evening river garden letter window winter summer answered thought nothing "
    "himself herself together however perhaps almost against between without children "
    "business carriage family sister brother daughter")
WORDS = tuple(_VOCABULARY.split())
WORDS_PER_SECOND = 2.6
MEL_BINS = 128  # large-v3-turbo
ENCODER_FRAMES, ENCODER_DIM = 1500, 1280


def sentence(rng: random.Random, seconds: float) -> str:
    n = max(1, round(seconds * WORDS_PER_SECOND))
    return " ".join(rng.choice(WORDS) for _ in range(n)).capitalize() + "."


class InstantTranscriber(ClipTranscriber):
    """The stage's clip transcriber with Whisper's encoder and decoder answering at once:
    language ``language`` at 0.98, a text of about 2.6 words per second of speech per window."""

    def __init__(self, settings: Any, language: str = "en") -> None:
        from faster_whisper.feature_extractor import FeatureExtractor

        self.model = SimpleNamespace(feature_extractor=FeatureExtractor(feature_size=MEL_BINS))
        self.settings = settings
        self.language = language
        self._rng = random.Random(0)
        self.encoder_rows = 0

    def rows(self, features: np.ndarray) -> np.ndarray:
        self.encoder_rows += len(features)
        return np.zeros((len(features), 1, 1), np.float16)  # the device keeps the real one

    def detect_language(self, rows: np.ndarray) -> list[list[tuple[str, float]]]:
        return [[(f"<|{self.language}|>", 0.98), ("<|de|>", 0.01)] for _ in range(len(rows))]

    def detect_slices(self, rows: np.ndarray, cuts: list[list[tuple[int, int]]]
                      ) -> list[list[list[tuple[str, float]]]]:
        # ranges of the real rows (kept on the device here): one answer per range
        return [self.detect_language(np.zeros((len(r), 1, 1), np.float16)) for r in cuts]

    def transcribe(self, features: np.ndarray, language: str, rows: np.ndarray | None = None,
                   beam_size: int | None = None, frames: list[int] | None = None,
                   no_repeat: int = 0) -> list[ClipText]:
        # words evenly over the window: their alignment is cross-attention on the device, not
        # CPU work around it, but placing them in clips is
        self.encoder_rows += len(features) - (0 if rows is None else len(rows))
        speech = [f / 100 for f in frames] if frames else [10.0] * len(features)  # window s
        return [_with_words(sentence(self._rng, s), s) for s in speech]


def _with_words(text: str, seconds: float) -> ClipText:
    words = text.split()
    step = seconds / len(words)
    return ClipText(text, -0.2, 0.01, [(" " + w, i * step, (i + 1) * step, 0.9)
                                       for i, w in enumerate(words)])


class InstantWhisperModel:
    """faster-whisper's ``transcribe`` for the fidelity check: the real log-mel, no network."""

    def __init__(self) -> None:
        from faster_whisper.feature_extractor import FeatureExtractor

        self.feature_extractor = FeatureExtractor(feature_size=MEL_BINS)

    def transcribe(self, audio: np.ndarray, **_: Any) -> tuple[list, None]:
        self.feature_extractor(audio)
        return [SimpleNamespace(text="restored text")], None


def instant_asr(stage: Any) -> InstantTranscriber:
    """Make ``stage`` (an AsrStage) run with an instant Whisper."""
    # one file at a time: the instant transcriber is this thread's (stage._transcriber)
    stage.settings = stage.settings.model_copy(update={"asr_files_in_flight": 1})
    tr = InstantTranscriber(stage.settings)
    stage._loaded = SimpleNamespace(model=tr.model, device="cpu",
                                    info=lambda: {"model": "instant", "version": None})
    stage._local.transcriber = tr
    return tr


def instant_sidon():
    """Sidon's contract (16 kHz in, 48 kHz out, 320-sample hop, peak 0.9, 50 Hz high-pass) with
    the GPU node's CPU side: rows padded and staged as a tensor; the filterbank and network
    run on the device, here at once (the output is the input held three times)."""
    from services.enhance.backends import Backend
    from services.enhance.sidon import EDGE, FRAME

    class InstantSidon(Backend):
        name, in_rate, out_rate, hop, peak, highpass_hz = "sidon", 16000, 48000, FRAME, 0.9, 50.0

        def load(self) -> None:
            pass

        def prepare(self, rows: np.ndarray) -> Any:
            import torch

            return torch.from_numpy(np.pad(rows, ((0, 0), (EDGE, EDGE))))

        def run(self, prepared: Any) -> np.ndarray:
            x = prepared.numpy()[:, EDGE:-EDGE]
            return np.repeat(x, 3, axis=1)

    return InstantSidon()


def instant_rnnoise():
    from services.enhance.backends import Backend
    from services.enhance.denoise import FRAME

    class InstantRNNoise(Backend):
        name, in_rate, out_rate, hop = "rnnoise", 48000, 48000, FRAME

        def load(self) -> None:
            pass

        def run(self, prepared: np.ndarray) -> np.ndarray:
            return prepared

    return InstantRNNoise()


def instant_annotator(settings: Any):
    """The real Annotator (resampling, DNSMOS windows, speaker slicing and mels, fidelity
    sample with Whisper's log-mel) with the DNSMOS network and the speaker LSTM answering
    at once, and the speech fraction from the VAD's torch port (the path a GPU node takes)."""
    import torch

    from services.enhance.quality.annotate import Annotator
    from services.enhance.quality.fidelity import FidelityChecker
    from services.enhance.quality.mel import MelSpec
    from services.enhance.quality.speaker import HOP, N_FFT, N_MELS, SR
    from services.enhance.quality.vad import SpeechFraction

    ann = Annotator(settings, "cpu", fidelity=FidelityChecker(model=InstantWhisperModel()))
    ann.dnsmos._run = lambda x: np.full((len(x), 3), 3.0, np.float32)
    ann.speaker._mel = MelSpec(SR, N_FFT, HOP, N_MELS, "cpu")
    unit = torch.full((1, 256), 1 / 16.0)
    ann.speaker._net = lambda mels: unit.expand(len(mels), 256)
    ann.vad = SpeechFraction("cpu", port=True)
    ann.vad.load()
    return ann


def instant_codec():
    """NeuCodec's CPU side: its own w2v-BERT filterbank (transformers) per segment."""
    from transformers import SeamlessM4TFeatureExtractor

    fe = SeamlessM4TFeatureExtractor(padding_value=1.0, return_attention_mask=True)
    return SimpleNamespace(feature_extractor=fe, device="cuda")


def instant_encode_batch(model: Any, items: list, policy: str = "exact") -> list[np.ndarray]:
    """encode_batch's CPU side on a GPU node (padded feature and audio tensors built for the
    copy to the device), codes at once."""
    import torch

    lmax = max(int(it.features.shape[0]) for it in items)
    feats = torch.full((len(items), lmax, items[0].features.shape[1]), 1.0)
    for i, it in enumerate(items):
        feats[i, : it.features.shape[0]] = it.features
    return [np.zeros(it.frames, np.int64) for it in items]
