"""Batched Whisper over clips with ``BatchedInferencePipeline.forward``, sharing encoder passes.

The clips picked for language ID are encoded once: the encoder output serves language ID first,
then their transcription (the pipeline's model is a thin proxy that hands back the cached output
for exactly those features). Transcription is greedy/beam at temperature 0 with timestamps on,
so each clip comes back as timestamped phrases in file time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from common.settings import Settings
from services.asr.clips import Window
from services.asr.vad import SAMPLE_RATE


@dataclass
class ClipResult:
    phrases: list[tuple[float, float, str]]  # (start, end, text) in file time
    avg_logprob: float
    no_speech_prob: float


class _CachingModel:
    """Proxy of a WhisperModel whose ``encode`` returns a cached output for given features."""

    def __init__(self, model: Any) -> None:
        self._model = model
        self._features: np.ndarray | None = None
        self._encoded: Any = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._model, name)

    def prime(self, features: np.ndarray, encoded: Any) -> None:
        self._features, self._encoded = features, encoded

    def encode(self, features: np.ndarray) -> Any:
        if features is self._features:
            encoded, self._features, self._encoded = self._encoded, None, None
            return encoded
        return self._model.encode(features)


class ClipTranscriber:
    def __init__(self, model: Any, settings: Settings) -> None:
        from faster_whisper import BatchedInferencePipeline

        self.model = model
        self.settings = settings
        self._proxy = _CachingModel(model)
        self.pipeline = BatchedInferencePipeline(self._proxy)

    def features(self, audio: np.ndarray, windows: list[Window]) -> np.ndarray:
        from faster_whisper.audio import pad_or_trim

        fe = self.model.feature_extractor
        return np.stack([pad_or_trim(fe(w.audio(audio))[..., :-1]) for w in windows])

    def encode(self, features: np.ndarray) -> Any:
        return self.model.encode(features)

    def detect_language(self, encoded: Any) -> list[list[tuple[str, float]]]:
        return self.model.model.detect_language(encoded)

    def _options(self, tokenizer: Any) -> Any:
        from faster_whisper.transcribe import TranscriptionOptions, get_suppressed_tokens

        return TranscriptionOptions(
            beam_size=self.settings.asr_beam_size, best_of=1, patience=1.0, length_penalty=1.0,
            repetition_penalty=1.0, no_repeat_ngram_size=0, log_prob_threshold=None,
            no_speech_threshold=None, compression_ratio_threshold=None,
            condition_on_previous_text=False, prompt_reset_on_temperature=0.5,
            temperatures=[0.0], initial_prompt=None, prefix=None, suppress_blank=True,
            suppress_tokens=get_suppressed_tokens(tokenizer, [-1]), without_timestamps=False,
            max_initial_timestamp=0.0, word_timestamps=False,
            prepend_punctuations="\"'“¿([{-", append_punctuations="\"'.。,，!！?？:：”)]}、",
            multilingual=False, max_new_tokens=None, clip_timestamps="0",
            hallucination_silence_threshold=None, hotwords=None)

    def transcribe(self, features: np.ndarray, windows: list[Window], language: str,
                   encoded: Any = None) -> dict[int, ClipResult]:
        """One batched forward over ``features`` (one row per window): results by clip index."""
        from faster_whisper.tokenizer import Tokenizer

        tokenizer = Tokenizer(self.model.hf_tokenizer, self.model.model.is_multilingual,
                              task="transcribe", language=language)
        meta = []
        for w in windows:
            length = w.offsets[-1] + w.clips[-1].duration
            meta.append({"offset": 0.0, "duration": length,
                         "segments": [{"start": 0, "end": int(length * SAMPLE_RATE)}]})
        if encoded is not None:
            self._proxy.prime(features, encoded)
        outputs = self.pipeline.forward(features, tokenizer, meta, self._options(tokenizer))
        results: dict[int, ClipResult] = {}
        for w, subs in zip(windows, outputs):
            lp = float(subs[0]["avg_logprob"]) if subs else -10.0
            ns = float(subs[0]["no_speech_prob"]) if subs else 1.0
            per_clip: list[list[tuple[float, float, str]]] = [[] for _ in w.clips]
            for sub in subs:
                start, end = float(sub["start"]), float(sub["end"])
                k, _ = w.to_file_time((start + end) / 2)  # a phrase belongs where its middle is
                c, off = w.clips[k], w.offsets[k]
                per_clip[k].append((min(c.end, max(c.start, c.start + start - off)),
                                    min(c.end, max(c.start, c.start + end - off)), sub["text"]))
            for idx, phrases in zip(w.indices, per_clip):
                results[idx] = ClipResult(phrases, lp, ns)
        return results
