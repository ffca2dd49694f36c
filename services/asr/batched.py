"""Batched Whisper over encoder windows (windows.py): one text per window, with its words.

Each window is decoded as faster-whisper's ``BatchedInferencePipeline`` decodes its chunks:
timestamps off, temperature 0, one full text per window, then word alignment (cross-attention
+ DTW), which places each word in a clip (windows.split). Timestamp tokens are not used to cut
a window's text: Whisper often ends a window after its first sentence in that mode and later
speech got nothing (docs/asr.md).

The windows picked for language ID are encoded once: the encoder output serves language ID
first, then their transcription, in the same batch as the first other windows: one generate
call over a batch costs about what one over a single row does on a CPU, so decoding the looks
apart cost a kept file two more calls. The stage encodes every row itself
(:meth:`ClipTranscriber.rows`, host arrays that stack) and the pipeline's model is a thin
proxy that hands them back for exactly those features.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from common.node.allocator import give_back
from services.asr.punctuation import prompt
from services.asr.settings import AsrSettings

# Rows per decoder call on a CPU. The decoder keeps every layer's cross-attention keys and
# values for each row (37 MB a row for Whisper base), so 8 rows held 290 MB more than one; 4
# decode in the same CPU time as 8 (11.1 against 11.7 s for 16 windows, 2 cores) at 120 MB,
# 2 take 25 % longer (docs/operations.md). A GPU keeps them in device memory: its batch is whole.
CPU_DECODE_ROWS = 4
# Rows a beam search takes on the one-thread decoder replica (load_model's); more go to the model
# on all cores. Held quick's calls of 1-3 rows took 6.3 s of generate on one thread against 8.6 s
# on CTranslate2's default threads; a 3-minute member's one call of 6 rows 4.3 s against 3.5 s
# (Whisper base int8, 2 cores, docs/asr.md).
REPLICA_ROWS = CPU_DECODE_ROWS
# On a CPU the heap's free pages go back to the system before a model phase when more than this
# is free (what is kept is faulted in again when used). 60-min member growth over 2 min: +208 MB
# at 256, +142..+150 at 128, +175..+181 every time, +271..+292 never; page faults on held quick
# 0.76M, 0.96-1.07M, 1.07M, 0.47M (docs/asr.md, "Choosing decoding and the allocator").
TRIM_OVER_MB = 256


def cpu_decode_parts(n: int, rows: int = CPU_DECODE_ROWS) -> list[slice]:
    """``n`` rows as decoder calls of ``rows`` each on a CPU, a last call of at most half that
    joining the one before (at most 1.5 x ``rows`` a call, 6: 222 MB). Greedy decoding steps
    the rows of a call together until its longest text ends, and a call of 2 rows costs nearly
    what one of 4 does: a file of 6 windows (3 minutes of speech) decoded as 4 + 2 took 2.9-3.3
    s of generate, as 6 in one call 2.3-2.5 s, the same texts (2 cores, docs/asr.md)."""
    starts = list(range(0, n, rows))
    if len(starts) > 1 and n - starts[-1] <= rows // 2:
        starts.pop()
    return [slice(a, b) for a, b in zip(starts, [*starts[1:], n])]


def align_parts(n: int, on_cpu: bool) -> list[slice]:
    """``n`` rows as word-alignment calls: one each on a CPU, where a call holds every decoder
    layer's cross-attention keys and values for its rows, and was the stage's peak (a 3-minute
    member's 6 rows: 859 -> 765 MB, docs/asr.md) while one row at a time costs no more CPU;
    all in one call on a GPU."""
    return [slice(i, i + 1) for i in range(n)] if on_cpu else [slice(0, n)]


class Window(Protocol):
    """What the transcriber needs of an encoder window (windows.Window)."""

    def audio(self, audio: np.ndarray) -> np.ndarray: ...

    def frames(self, hop: int) -> int: ...


@dataclass
class ClipText:
    text: str
    avg_logprob: float
    no_speech_prob: float
    # (word, start, end, probability): seconds of the window as decoded, of the file once
    # split into clips (windows.split)
    words: list[tuple[str, float, float, float]] | None = None


class _CachingModel:
    """Proxy of a WhisperModel whose ``encode`` hands back the rows it was given (a host array
    of encoder output) for exactly the features they were computed from; with ``decoder`` (a
    CTranslate2 Whisper on its own threads, load_model's), the pipeline's beam search over up
    to :data:`REPLICA_ROWS` rows runs on that replica (:meth:`decoding`)."""

    def __init__(self, model: Any, decoder: Any | None = None) -> None:
        self._model = model
        self._decoder = decoder
        self._on_replica = False
        self._features: np.ndarray | None = None
        self._rows: np.ndarray | None = None  # also the memory the last StorageView shares

    def __getattr__(self, name: str) -> Any:
        if name == "model" and self._on_replica:
            return self._decoder
        return getattr(self._model, name)

    def decoding(self, rows: int) -> None:
        """The next beam search is over ``rows`` rows: on the replica when it has few."""
        self._on_replica = self._decoder is not None and rows <= REPLICA_ROWS

    def prime(self, features: np.ndarray, rows: np.ndarray) -> None:
        self._features, self._rows = features, rows

    def encode(self, features: np.ndarray) -> Any:
        if features is not self._features or self._rows is None:
            return self._model.encode(features)
        self._features = None
        return storage(self._rows)


def storage(rows: np.ndarray) -> Any:
    """Host rows of encoder output as a CTranslate2 StorageView sharing their memory (keep them
    alive while it is used): generate, align and language ID copy it to the model's device, as
    they do for faster-whisper's own multi-GPU encoder output."""
    import ctranslate2

    return ctranslate2.StorageView.from_array(rows)


def host_rows(encoded: Any) -> np.ndarray:
    """An encoder output (a CTranslate2 StorageView, on any device) as a host array."""
    import ctranslate2

    if encoded.device != "cpu":
        encoded = encoded.to_device(ctranslate2.Device.cpu)
    return np.array(encoded)


class ClipTranscriber:
    def __init__(self, model: Any, settings: AsrSettings, decoder: Any | None = None) -> None:
        from faster_whisper import BatchedInferencePipeline

        self.model = model
        self.settings = settings
        self._proxy = _CachingModel(model, decoder)
        self.pipeline = BatchedInferencePipeline(self._proxy)

    def features(self, audio: np.ndarray, windows: Sequence[Window]) -> np.ndarray:
        from faster_whisper.audio import pad_or_trim

        fe = self.model.feature_extractor
        return np.stack([pad_or_trim(fe(w.audio(audio))[..., :-1]) for w in windows])

    def rows(self, features: np.ndarray) -> np.ndarray:
        """Whisper's encoder output for ``features``, one row per clip, as a host array (rows
        of several calls stack into one batch). On a CPU one row at a time: batching rows makes
        the encoder no cheaper there but 12-20 % slower (7 rows of whisper base, int8, 2 cores:
        2.9-3.2 s one by one, 3.4-3.7 s in one call); a GPU gets them all at once."""
        self._heap_back()
        if len(features) == 1 or self.model.model.device != "cpu":
            return host_rows(self.model.encode(features))
        return np.concatenate([host_rows(self.model.encode(features[i:i + 1]))
                               for i in range(len(features))])

    def _heap_back(self) -> None:
        """Before a model phase on a CPU (encode, beam search, word alignment): the heap's free
        pages handed back when more than :data:`TRIM_OVER_MB` is free. A beam search's buffers
        come and go in sizes the heap's free memory seldom fits, so that memory, left resident
        by earlier calls, grew with the member (a 60-min member's heap 464 MB, 101 in use);
        handed back first, what a call uses is what is resident."""
        if self.model.model.device == "cpu":
            give_back(TRIM_OVER_MB)

    def detect_language(self, rows: np.ndarray) -> list[list[tuple[str, float]]]:
        """Each row's ``[(language token, probability), ...]`` (CTranslate2's Whisper)."""
        dists: list[list[tuple[str, float]]] = self.model.model.detect_language(storage(rows))
        return dists

    def detect_slices(self, rows: np.ndarray, cuts: list[list[tuple[int, int]]]
                      ) -> list[list[list[tuple[str, float]]]]:
        """Language ID of ranges of encoder rows (``cuts[i]``: ranges of ``rows[i]``): one
        decoder step each, no encoder pass (Whisper's decoder attends to any number of rows);
        ranges of one length share a call."""
        by_len: dict[int, list[tuple[int, int, int, int]]] = {}
        for i, ranges in enumerate(cuts):
            for k, (a, b) in enumerate(ranges):
                by_len.setdefault(b - a, []).append((i, k, a, b))
        out: list[list[list[tuple[str, float]]]] = [[[] for _ in r] for r in cuts]
        for group in by_len.values():
            batch = np.ascontiguousarray(np.stack([rows[i, a:b] for i, _, a, b in group]))
            for (i, k, _, _), dist in zip(group, self.detect_language(batch)):
                out[i][k] = dist
        return out

    def _options(self, tokenizer: Any, beam_size: int, no_repeat: int = 0) -> Any:
        from faster_whisper.transcribe import TranscriptionOptions, get_suppressed_tokens

        return TranscriptionOptions(
            beam_size=beam_size, best_of=1, patience=self.settings.asr_patience,
            length_penalty=1.0,
            repetition_penalty=1.0, no_repeat_ngram_size=no_repeat, log_prob_threshold=None,
            no_speech_threshold=None, compression_ratio_threshold=None,
            condition_on_previous_text=False, prompt_reset_on_temperature=0.5,
            temperatures=[0.0], prefix=None,
            initial_prompt=prompt(tokenizer.language_code,
                                  self.settings.asr_punctuation_prompt_skip)
            if self.settings.asr_punctuation_prompt else None,
            suppress_blank=True,
            suppress_tokens=get_suppressed_tokens(tokenizer, [-1]), without_timestamps=True,
            max_initial_timestamp=0.0, word_timestamps=False,  # aligned apart: _words
            prepend_punctuations="\"'“¿([{-", append_punctuations="\"'.。,，!！?？:：”)]}、",
            multilingual=False, max_new_tokens=None, clip_timestamps="0",
            hallucination_silence_threshold=None, hotwords=None)

    def frames(self, windows: Sequence[Window]) -> list[int]:
        """Each window's length in mel frames (what word alignment looks at)."""
        return [w.frames(self.model.feature_extractor.hop_length) for w in windows]

    def transcribe(self, features: np.ndarray, language: str, rows: np.ndarray | None = None,
                   beam_size: int | None = None, frames: list[int] | None = None,
                   no_repeat: int = 0) -> list[ClipText]:
        """One batched decode over ``features`` (one row per window): one text per row; with
        ``frames`` (:meth:`frames`), each text's words too (they place it in clips). ``rows``
        (:meth:`rows`): their encoder output, already computed (else the pipeline encodes).
        ``no_repeat`` > 0: no n-gram of that many tokens is generated twice (CTranslate2's
        ``no_repeat_ngram_size``: a decoder loop cannot start). On a CPU the rows go to
        decoder calls of :data:`CPU_DECODE_ROWS` (:func:`cpu_decode_parts`)."""
        parts = ([slice(0, len(features))] if self.model.model.device != "cpu"
                 else cpu_decode_parts(len(features)))
        out: list[ClipText] = []
        for part in parts:
            out += self._decode(features[part], language, None if rows is None else rows[part],
                                beam_size, None if frames is None else frames[part], no_repeat)
        return out

    def _decode(self, features: np.ndarray, language: str, rows: np.ndarray | None,
                beam_size: int | None, frames: list[int] | None, no_repeat: int
                ) -> list[ClipText]:
        """One decoder call over ``features`` (:meth:`transcribe`)."""
        from faster_whisper.tokenizer import Tokenizer

        tokenizer = Tokenizer(self.model.hf_tokenizer, self.model.model.is_multilingual,
                              task="transcribe", language=language)
        if rows is not None:
            self._proxy.prime(features, rows)
        self._proxy.decoding(len(features))
        self._heap_back()
        options = self._options(tokenizer, beam_size or self.settings.asr_beam_size, no_repeat)
        encoder_output, outputs = self.pipeline.generate_segment_batched(features, tokenizer,
                                                                         options)
        out = [ClipText(tokenizer.decode(o["tokens"]).strip(), float(o["avg_logprob"]),
                        float(o["no_speech_prob"])) for o in outputs]
        if frames is not None:
            for t, words in zip(out, self._words(tokenizer, encoder_output, outputs, frames,
                                                 options)):
                t.words = words
        return out

    def _words(self, tokenizer: Any, encoder_output: Any, outputs: list[dict[str, Any]],
               frames: list[int], options: Any) -> list[list[tuple[str, float, float, float]]]:
        """faster-whisper's word alignment (cross-attention + DTW) over the batch's rows; on a
        CPU one row at a time (:func:`align_parts`)."""
        segs: list[list[dict[str, Any]]] = [
            [{"tokens": list(o["tokens"]), "start": 0.0, "end": f / 100.0, "seek": 0}]
            for o, f in zip(outputs, frames)]
        self._heap_back()
        on_cpu = encoder_output.device == "cpu"
        host = host_rows(encoder_output) if on_cpu and len(segs) > 1 else None
        for part in align_parts(len(segs), on_cpu):
            rows = encoder_output if host is None else storage(
                np.ascontiguousarray(host[part]))
            self.model.add_word_timestamps(segs[part], tokenizer, rows, frames[part],
                                           options.prepend_punctuations,
                                           options.append_punctuations, 0.0)
        return [[(w["word"], float(w["start"]), float(w["end"]), float(w["probability"]))
                 for w in s[0].get("words", [])] for s in segs]
