"""The ASR stage (docs/architecture.md): language ID, then batched transcription, per source file.

Reads the raw shard, writes ``asr/shard-000123.jsonl`` with exactly one line per member. The
model is imported and loaded lazily in :meth:`AsrStage.load` (after the worker's fork).
"""

from __future__ import annotations

import json
import os
import time
from collections import Counter
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from common.settings import Settings
from common.stage import Stage, StageResult
from services.asr import records
from services.asr.decode_ahead import SAMPLE_RATE, decoded_members
from services.asr.spec import SPEC


@dataclass
class FileOutcome:
    line: dict[str, Any]
    model_seconds: float = 0.0
    kept_seconds: float = 0.0
    segments: int = 0
    kept: int = 0
    extra: dict[str, Any] = field(default_factory=dict)


class AsrStage(Stage):
    name = "asr"

    def __init__(self, settings: Settings) -> None:
        super().__init__(settings)
        self._loaded = None  # services.asr.model.LoadedModel, set by load()
        self._clip_transcriber = None  # services.asr.batched.ClipTranscriber

    # --- Stage contract --------------------------------------------------------------------------
    def load(self) -> None:
        if self._loaded is None:
            from services.asr.model import load_model

            self._loaded = load_model(self.settings)

    def model_info(self) -> dict[str, Any]:
        if self._loaded is None:
            return {"model": self.settings.asr_model, "version": None}
        return self._loaded.info()

    def process(self, shard_id: int, inputs: dict[str, Path], workdir: Path) -> StageResult:
        self.load()
        out = Path(workdir) / f"{self.settings.shard_stem(shard_id)}.asr.jsonl"
        counts: Counter[str] = Counter()
        languages: Counter[str] = Counter()
        seconds_in = seconds_out = model_seconds = decode_wait = 0.0
        members = decoded_members(inputs["shard"], self.settings)
        with open(out, "w", encoding="utf-8") as f, closing(members):
            while True:
                t_wait = time.perf_counter()
                item = next(members, None)
                decode_wait += time.perf_counter() - t_wait
                if item is None:
                    break
                counts["files"] += 1
                if item.error is not None:
                    outcome = FileOutcome(records.line(item.key, f"error:{item.error}"))
                else:
                    assert item.audio is not None
                    seconds_in += item.audio.size / SAMPLE_RATE
                    outcome = self.transcribe_file(item.key, item.audio)
                    if item.notes:
                        outcome.line["notes"] = item.notes
                        counts["truncated"] += any(n.startswith("truncated") for n in item.notes)
                status = outcome.line["status"]
                counts[status.split(":", 1)[0].replace("error", "errors")] += 1
                if outcome.line["language"] and status == "ok":
                    languages[outcome.line["language"]] += 1
                counts["segments"] += outcome.segments
                counts["kept_segments"] += outcome.kept
                seconds_out += outcome.kept_seconds
                model_seconds += outcome.model_seconds
                f.write(json.dumps(outcome.line, ensure_ascii=False) + "\n")
            f.flush()
            os.fsync(f.fileno())
        for k in ("files", "ok", "dropped", "errors", "segments", "kept_segments"):
            counts.setdefault(k, 0)
        return StageResult(
            outputs={SPEC.output_key(self.settings, shard_id): out},
            counts=dict(counts), audio_seconds_in=seconds_in, audio_seconds_out=seconds_out,
            model_seconds=model_seconds,
            extra={"languages": dict(languages), "decode_wait_seconds": round(decode_wait, 3)},
        )

    # --- one file ----------------------------------------------------------------------------------
    def _transcriber(self):
        from services.asr.batched import ClipTranscriber

        self.load()
        assert self._loaded is not None
        if self._clip_transcriber is None:
            self._clip_transcriber = ClipTranscriber(self._loaded.model, self.settings)
        return self._clip_transcriber

    def transcribe_file(self, key: str, audio: np.ndarray) -> FileOutcome:
        """Language ID, then (if kept) transcription and segment flags: one JSONL line."""
        from services.asr.clips import Window, pack_windows, plan_clips
        from services.asr.langid import aggregate, pick_windows

        s = self.settings
        tr = self._transcriber()
        duration = audio.size / SAMPLE_RATE
        clips = plan_clips(audio, s)
        if not clips:  # silence, noise, music: nothing for language ID or transcription
            return FileOutcome(records.line(key, "dropped:no_speech", duration=duration))
        windows = pack_windows(clips)
        t0 = time.perf_counter()
        lid_idx = pick_windows(len(windows), s.lid_windows)
        lid_windows = [windows[i] for i in lid_idx]
        lid_feats = tr.features(audio, lid_windows)
        lid_encoded = tr.encode(lid_feats)
        guess = aggregate(tr.detect_language(lid_encoded),
                          [w.speech_seconds for w in lid_windows])
        model_seconds = time.perf_counter() - t0
        common = {"language": guess.language, "language_probability": guess.probability,
                  "duration": duration}
        if guess.language not in s.languages or guess.probability < s.language_threshold:
            return FileOutcome(records.line(key, "dropped:language", **common), model_seconds)
        language = guess.language
        assert language is not None
        t1 = time.perf_counter()
        results = tr.transcribe(lid_feats, lid_windows, language, lid_encoded)
        rest = [w for i, w in enumerate(windows) if i not in set(lid_idx)]
        for b in range(0, len(rest), s.asr_batch_size):
            batch = rest[b:b + s.asr_batch_size]
            results.update(tr.transcribe(tr.features(audio, batch), batch, language))
        # Whisper may end a packed window early and leave a clip without text: give such clips
        # a window of their own (costs encoder passes only when it happens).
        alone = [Window([clips[i]], [i]) for w in windows if len(w.clips) > 1 for i in w.indices
                 if not any(t.strip() for _, _, t in results[i].phrases)]
        for b in range(0, len(alone), s.asr_batch_size):
            batch = alone[b:b + s.asr_batch_size]
            results.update(tr.transcribe(tr.features(audio, batch), batch, language))
        model_seconds += time.perf_counter() - t1
        return self._segments(key, clips, results, common, language, model_seconds)

    def _segments(self, key: str, clips: list, results: dict, common: dict[str, Any],
                  language: str, model_seconds: float) -> FileOutcome:
        from faster_whisper.transcribe import get_compression_ratio

        from services.asr.policy import Phrase, split_clip
        from services.asr.quality import flag_segment

        s = self.settings
        segments: list[dict[str, Any]] = []
        kept_seconds = 0.0
        for i, clip in enumerate(clips):
            res = results[i]
            phrases = [Phrase(a, b, t) for a, b, t in res.phrases]
            for start, end, text in split_clip(clip, phrases, s.segment_min_seconds,
                                               s.segment_max_seconds, language):
                cr = get_compression_ratio(text) if text else 0.0
                reasons = flag_segment(text, start, end, res.avg_logprob, res.no_speech_prob, cr, s)
                segments.append(records.segment(len(segments), start, end, text, res.avg_logprob,
                                                res.no_speech_prob, cr, reasons))
                if not reasons:
                    kept_seconds += end - start
        kept = sum(1 for seg in segments if seg["kept"])
        return FileOutcome(records.line(key, "ok", segments=segments, **common), model_seconds,
                           kept_seconds, len(segments), kept)
