"""The ASR stage (docs/architecture.md): language ID, then batched transcription, per source file.

Reads the raw shard, writes ``asr/shard-000123.jsonl`` with exactly one line per member. The
model is imported and loaded lazily in :meth:`AsrStage.load` (after the worker's fork).
"""

from __future__ import annotations

import os
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from common.stages.contract import Stage, StageResult
from services.asr import records
from services.asr.decode_ahead import SAMPLE_RATE, Decoded, decoded_members
from services.asr.overlap import files_in_flight, in_order
from services.asr.settings import AsrSettings
from services.asr.spec import SPEC
from services.asr.stats import AsrStats
from services.provenance.table import write_table
from services.records import AsrLine, LineStatus
from services.text.forms import normaliser, with_forms

if TYPE_CHECKING:  # imported at run time by load() and _transcriber(), after the worker's fork
    from services.asr.batched import ClipTranscriber
    from services.asr.separation import Separator
    from services.whisper.model import LoadedModel


# the shard's count each kind of line adds to
_COUNTED = {LineStatus.OK: "ok", LineStatus.DROPPED: "dropped", LineStatus.ERROR: "errors"}


@dataclass
class FileOutcome:
    line: AsrLine
    kept_seconds: float = 0.0
    extra: dict[str, int] = field(default_factory=dict)  # added to the shard's counts

    @property
    def segments(self) -> int:
        return len(self.line.segments)

    @property
    def kept(self) -> int:
        return len(self.line.kept)


class AsrStage(Stage):
    name = "asr"
    settings: AsrSettings

    def __init__(self, settings: AsrSettings) -> None:
        super().__init__(settings)  # its section: the spec checked it (StageSpec.section)
        self._loaded: LoadedModel | None = None  # set by load()
        self._local = threading.local()  # each thread's transcriber
        self._separator: Separator | None = None  # set by load() when a model is given
        # the spoken forms' normalisers, built per language on first use (services/text)
        self._text = normaliser(self.settings.asr_phonemes)

    # --- Stage contract --------------------------------------------------------------------------
    def load(self) -> None:
        if self._loaded is None:
            from common.node.allocator import loading
            from services.whisper.model import load_model

            with loading():  # a decoder replica per file in flight (a CPU's: only it has one)
                self._loaded = load_model(self.settings, self.settings.asr_device, decoder=True,
                                          decoder_replicas=self._files_in_flight("cpu"))
        if self.settings.asr_separation_model and self._separator is None:
            from services.asr.separation import Separator
            from services.asr.separation_model import load_separation_model

            self._separator = Separator(
                load_separation_model(self.settings.asr_separation_model,
                                      self.settings.asr_separation_name, self.settings,
                                      self.settings.asr_separation_backend),
                self._loaded.device)

    def model_info(self) -> dict[str, Any]:
        info = ({"model": self.settings.asr_model, "version": None} if self._loaded is None
                else self._loaded.info())
        if self.settings.asr_separation_model:  # the decoded audio depends on it too
            info["separation"] = self.settings.asr_separation_model
            info["separation_name"] = self.settings.asr_separation_name
            if self.settings.asr_separation_backend != "demucs":  # demucs: as before it existed
                info["separation_backend"] = self.settings.asr_separation_backend
        return info

    def process(self, shard_id: int, inputs: dict[str, Path], workdir: Path) -> StageResult:
        self.load()
        out = Path(workdir) / f"{self.settings.shard_stem(shard_id)}.asr.jsonl"
        counts: Counter[str] = Counter()
        languages: Counter[str] = Counter()
        seconds_in = seconds_out = text_seconds = 0.0
        members = decoded_members(inputs["shard"], self.settings)
        waited = [0.0]  # seconds this thread waited on the decoding thread

        def decoded() -> Iterator[Decoded]:
            while True:
                t_wait = time.perf_counter()
                item = next(members, None)
                waited[0] += time.perf_counter() - t_wait
                if item is None:
                    return
                yield item

        assert self._loaded is not None
        depth = self._files_in_flight(self._loaded.device)
        with open(out, "w", encoding="utf-8") as f, closing(members):
            for item, outcome in in_order(decoded(), self._file, depth):
                counts["files"] += 1
                if item.error is None:
                    assert item.audio is not None
                    seconds_in += item.audio.size / SAMPLE_RATE
                    t_text, failed = time.perf_counter(), self._text.failed
                    bounded = self._text.bounded
                    outcome.line = with_forms(outcome.line, self._text)
                    text_seconds += time.perf_counter() - t_text
                    if self._text.failed > failed:  # kept, without text_spoken
                        counts["text_failed"] += self._text.failed - failed
                    if self._text.bounded > bounded:  # kept, without text_spoken: too long
                        counts["text_bounded"] += self._text.bounded - bounded
                    if item.notes:
                        outcome.line = outcome.line.model_copy(update={"notes": item.notes})
                        counts["truncated"] += any(n.startswith("truncated") for n in item.notes)
                counts[_COUNTED[outcome.line.outcome[0]]] += 1
                if outcome.line.language and outcome.line.ok:
                    languages[outcome.line.language] += 1
                counts["segments"] += outcome.segments
                counts.update({k: v for k, v in outcome.extra.items() if v})
                counts["kept_segments"] += outcome.kept
                seconds_out += outcome.kept_seconds
                f.write(outcome.line.to_json() + "\n")
            f.flush()
            os.fsync(f.fileno())
        for k in ("files", "ok", "dropped", "errors", "segments", "kept_segments"):
            counts.setdefault(k, 0)
        prov = Path(workdir) / f"{self.settings.shard_stem(shard_id)}.provenance.jsonl"
        write_table(inputs["shard"], prov, self.settings.max_sidecar_bytes)
        return StageResult(
            outputs={SPEC.output_key(self.settings, shard_id): out,
                     SPEC.side_output_key("provenance", self.settings, shard_id): prov},
            counts=dict(counts), audio_seconds_in=seconds_in, audio_seconds_out=seconds_out,
            extra=AsrStats(languages=dict(languages), decode_wait_seconds=round(waited[0], 3),
                           text_seconds=round(text_seconds, 3)).to_dict(),
        )

    def _files_in_flight(self, device: str) -> int:
        return files_in_flight(self.settings.asr_files_in_flight, device,
                               bool(self.settings.asr_separation_model))

    # --- one file ---------------------------------------------------------------------------------
    def _file(self, item: Decoded) -> FileOutcome:
        """One decoded member's outcome: its error, or its transcription (no spoken forms)."""
        if item.error is not None:
            return FileOutcome(records.line(item.key, LineStatus.ERROR, item.error))
        assert item.audio is not None
        truncated = any(n.startswith("truncated") for n in item.notes or ())
        return self.transcribe_file(item.key, item.audio, truncated)

    def _transcriber(self) -> ClipTranscriber:
        """This thread's transcriber (overlap.py: files in flight each have one)."""
        from services.asr.batched import ClipTranscriber

        self.load()
        assert self._loaded is not None
        tr: ClipTranscriber | None = getattr(self._local, "transcriber", None)
        if tr is None:
            tr = ClipTranscriber(self._loaded.model, self.settings, self._loaded.decoder)
            self._local.transcriber = tr
        return tr

    def transcribe_file(self, key: str, audio: np.ndarray, truncated: bool = False) -> FileOutcome:
        """Language ID, then (if kept) transcription and segment flags: one JSONL line.

        ``truncated``: the file was cut short, so the segment ending at its end is flagged."""
        from services.asr.clips import file_spans, head_spans, plan_clips
        from services.asr.langid import (
            aggregate,
            first_look,
            kept_language,
            main_language,
            pick_windows,
            settled,
        )
        from services.asr.level import heard_level
        from services.asr.multilingual import WindowDecoder, by_language, recover_each, relabel
        from services.asr.policy import build_segments
        from services.asr.quality import is_loop
        from services.asr.windows import Window, pack, split, units_of

        s = self.settings
        tr = self._transcriber()
        duration = audio.size / SAMPLE_RATE
        audio = heard_level(audio, s.asr_quiet_peak_dbfs)
        spans, resume = head_spans(audio, s)  # language ID needs the head only
        clips = plan_clips(spans, s)
        if not clips and resume < audio.size:  # a silent head: look at the rest
            clips, resume = plan_clips(file_spans(audio, s, resume), s), audio.size
        if not clips:  # silence, noise, music: nothing for language ID or transcription
            return FileOutcome(records.line(key, LineStatus.DROPPED, "no_speech",
                                            duration=duration))
        heard, music_blocks = self._heard(audio)  # what Whisper decodes; VAD reads the source
        head = pack(units_of(clips))
        # the head's last window takes more speech once the file is kept: not looked at
        lid_idx = pick_windows(len(head) - (resume < audio.size and len(head) > 1),
                               s.asr_lid_windows)
        looks: list[tuple[list[Window], np.ndarray, np.ndarray]] = []  # (windows, features, rows)

        def look(idx: list[int]) -> list[list[tuple[str, float]]]:
            windows = [head[i] for i in idx]
            feats = tr.features(heard, windows)
            rows = tr.rows(feats)
            looks.append((windows, feats, rows))
            return tr.detect_language(rows)

        with self.clock.model():
            first = first_look(lid_idx)
            dists = look(first)
            guess = aggregate(dists, [head[i].speech_seconds for i in first])
            if not settled(guess, s.asr_languages, s.asr_lid_first_look_probability):
                rest = [i for i in lid_idx if i not in first]
                dists += look(rest) if rest else []
                guess = aggregate(dists, [head[i].speech_seconds for i in first + rest])
        common: records.LineFields = {"language": guess.language,
                                      "language_probability": guess.probability,
                                      "duration": duration}
        if kept_language(guess, dists, s.asr_languages, s.asr_language_threshold) is None:
            return FileOutcome(records.line(key, LineStatus.DROPPED, "language", **common),
                               extra={"music_blocks": music_blocks})
        if resume < audio.size:  # kept: now the rest of the file
            clips += plan_clips(file_spans(audio, s, resume), s)
        looked = [w for ws, _, _ in looks for w in ws]
        taken = {u for w in looked for u in w.units}
        dec = WindowDecoder(tr, heard, s.asr_languages, s.asr_batch_size, self.clock.model,
                            s.asr_word_timestamps)
        got = dec.run(looked + pack([u for u in units_of(clips) if u not in taken]), None,
                      np.concatenate([f for _, f, _ in looks]),
                      np.concatenate([r for _, _, r in looks]))
        clips, langs, index = by_language(clips, got.span_languages())
        texts = split(clips, relabel(got.windows, index), got.texts, audio,
                      s.asr_word_timestamps)
        cov = recover_each(clips, texts, langs, s.asr_languages, dec,
                           lambda text: is_loop(text, s.asr_max_compression_ratio))
        segs = build_segments(clips, texts, cov.short, s, duration if truncated else None,
                              langs)
        common.update(main_language(clips, langs, s.asr_languages, guess))
        if any(x in s.asr_languages for x in langs):
            line = records.line(key, LineStatus.OK, segments=segs.lines, **common)
        else:
            line = records.line(key, LineStatus.DROPPED, "language", **common)
        return FileOutcome(line,
                           segs.kept_seconds,
                           {"coverage_retried": cov.retried, "coverage_flagged": len(cov.short),
                            "language_switches": dec.switches, "music_blocks": music_blocks})

    def _heard(self, audio: np.ndarray) -> tuple[np.ndarray, int]:
        """(the audio Whisper decodes, the 30 s blocks of it whose music was taken out)."""
        if self._separator is not None:
            from services.asr.separation import separate

            return separate(audio, self.settings.asr_music_gate, self._separator,
                            self.settings.asr_separation_min_removed)
        if not self.settings.asr_music_suppression:
            return audio, 0
        from services.asr.music import suppress

        return suppress(audio, self.settings.asr_music_gate)
