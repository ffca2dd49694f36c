"""One side of the asr comparison (bench/asr_peer.py) in a process of its own, so its whole
process is measured (wall, CPU, system time, page faults, peak RSS: the parent reads them).

    python -m bench.asr_side ours|peer SETS.npz OUT.json

``ours``: the asr stage as ``onsei run`` runs it (its allocator policy, language ID, decoding,
coverage, the spoken forms), settings from the environment (``ONSEI_ASR_BEAM_SIZE``...).
``peer``: faster-whisper's ``BatchedInferencePipeline.transcribe`` at its shipped defaults
(beam 5, its temperature list, Silero VAD, its language ID first; a file whose language is not
kept is dropped before its segments are consumed); ``ONSEI_BENCH_PEER_BEAM`` sets its beam for
the labelled greedy row. Both load the same model (``ONSEI_ASR_MODEL``, else the bundled Whisper
base) with the same compute type and batch size, and count their model calls: encoder rows and
decoder calls (generate, language ID, alignment).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from bench.asr_sets import load

KINDS = ("encode", "generate", "align", "detect_language")


class Counted:
    """A CTranslate2 Whisper whose model calls are counted: calls and rows of each kind, and
    the seconds spent in them where ``stats`` keeps a third slot (bench/asr_calls.py)."""

    def __init__(self, model: Any, stats: dict[str, list[Any]]) -> None:
        self._model, self._stats = model, stats

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._model, name)
        if name not in KINDS:
            return attr

        def counted(x: Any, *args: Any, **kw: Any) -> Any:
            t = time.perf_counter()
            out = attr(x, *args, **kw)
            st = self._stats[name]
            st[0] += 1
            st[1] += len(x) if isinstance(x, list) else int(x.shape[0])
            if len(st) > 2:
                st[2] += time.perf_counter() - t
            return out

        return counted


def count_calls(stage: Any, stats: dict[str, list[Any]]) -> None:
    """The loaded asr ``stage``'s model calls counted into ``stats`` (:class:`Counted`), on both
    replicas when it has two."""
    assert stage._loaded is not None
    stage._loaded.model.model = Counted(stage._loaded.model.model, stats)
    if stage._loaded.decoder is not None:
        stage._loaded.decoder = Counted(stage._loaded.decoder, stats)


def _settings(tmp: Path) -> Any:
    from services.asr.settings import AsrSettings

    return AsrSettings(asr_model=os.environ.get("ONSEI_ASR_MODEL", "bundled:whisper-base"),
                       input_url=str(tmp / "raw"), output_url=str(tmp / "out"),
                       scratch_dir=str(tmp / "scratch"))


def plant(kinds: str) -> None:
    """Known regressions for the guard's test (bench/check.py), comma-separated:
    ``double-encode`` encodes every window twice (its output the second time), ``fresh-buffers``
    maps each large buffer afresh (the allocator threshold at 1 MiB, each thread its own heap)."""
    for kind in filter(None, kinds.split(",")):
        _plant(kind)


def _plant(kind: str) -> None:
    if kind == "double-encode":
        from services.asr.batched import ClipTranscriber

        rows = ClipTranscriber.rows

        def twice(self: Any, features: Any) -> Any:
            rows(self, features)
            return rows(self, features)

        ClipTranscriber.rows = twice  # type: ignore[method-assign]
    elif kind == "fresh-buffers":
        from common.node.allocator import map_large_buffers

        map_large_buffers(1024)
    else:
        raise ValueError(f"unknown plant {kind!r}")


def ours(info: list[dict], audio: dict[str, Any], stats: dict[str, list[int]],
         flagged: dict[str, list[list[Any]]] | None = None) -> dict[str, str]:
    """Each file's kept text; ``flagged``: each file's segments not kept, as (start, end,
    reasons, text), so a loss to the peer can be told apart from a filter's choice."""
    from common.node.allocator import map_large_buffers, stage_threshold_kb
    from services.asr.overlap import files_in_flight, in_order
    from services.asr.spec import SPEC
    from services.asr.stage import AsrStage
    from services.text.forms import with_forms

    with tempfile.TemporaryDirectory(prefix="onsei-asr-side-") as d:
        stage = AsrStage(_settings(Path(d)))
        # as the runner and a worker process set it for this stage, before the model loads
        map_large_buffers(stage_threshold_kb(SPEC.mmap_threshold_kb,
                                             stage.settings.worker_mmap_threshold_kb))
        plant(os.environ.get("ONSEI_BENCH_PLANT", ""))
        stage.load()
        count_calls(stage, stats)
        assert stage._loaded is not None
        out: dict[str, str] = {}
        # files in flight as the stage's process() runs them (services/asr/overlap.py)
        depth = files_in_flight(stage.settings.asr_files_in_flight, stage._loaded.device,
                                stage._separator is not None)
        for f, outcome in in_order(iter(info), lambda f: stage.transcribe_file(
                f["key"], audio[f["key"]]), depth):
            line = with_forms(outcome.line, stage._text)
            joiner = "" if f["language"] == "ja" else " "
            out[f["key"]] = joiner.join(x.text for x in line.kept)
            if flagged is not None:
                flagged[f["key"]] = [[x.start, x.end, x.reason, x.text]
                                     for x in line.segments if not x.kept]
        return out


def peer(info: list[dict], audio: dict[str, Any], stats: dict[str, list[int]]) -> dict[str, str]:
    from faster_whisper import BatchedInferencePipeline

    from services.whisper.model import load_model

    with tempfile.TemporaryDirectory(prefix="onsei-asr-side-") as d:
        s = _settings(Path(d))
        model = load_model(s, s.asr_device).model
        model.model = Counted(model.model, stats)
        pipe = BatchedInferencePipeline(model)
        beam = os.environ.get("ONSEI_BENCH_PEER_BEAM")
        kw: dict[str, Any] = {"beam_size": int(beam)} if beam else {}
        out: dict[str, str] = {}
        for f in info:
            segments, lid = pipe.transcribe(audio[f["key"]], batch_size=s.asr_batch_size,
                                            word_timestamps=s.asr_word_timestamps, **kw)
            if lid.language not in s.asr_languages or \
                    lid.language_probability < s.asr_language_threshold:
                out[f["key"]] = ""  # dropped, as the stage drops it: segments never decoded
                continue
            joiner = "" if lid.language == "ja" else " "
            out[f["key"]] = joiner.join(x.text.strip() for x in segments)
        return out


def main(side: str, sets: str, out: str) -> None:
    info, audio = load(Path(sets))
    stats: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    t = time.perf_counter()
    flagged: dict[str, list[list[Any]]] = {}
    texts = ours(info, audio, stats, flagged) if side == "ours" else peer(info, audio, stats)
    Path(out).write_text(json.dumps({"texts": texts, "calls": dict(stats), "flagged": flagged,
                                     "inner_seconds": time.perf_counter() - t}))


if __name__ == "__main__":
    main(*sys.argv[1:4])
