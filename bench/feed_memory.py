"""Peak memory of one stage on one member of a given length, in a fresh process.

    python -m bench.feed_memory asr 1200      -> prints the peak RSS in MB (ru_maxrss)

The member is recorded speech (bench/feed_corpus.py) in ``--codec`` (default opus 48 kHz, the
costliest to hold: the decoder's own rate); the stage runs through the attempt engine with its
models answering at once (bench/feed_fakes.py): what grows with a file's length is decoding,
VAD, planning, cutting and writing, not the model. enhance reads asr's output, made first.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

SHARD = 1


def _shard(root: Path, settings, seconds: float, codec: int) -> None:
    from bench.feed_corpus import CODECS, encode, speech_track
    from fixtures.speechgen import make_shard

    ext, args, rate = CODECS[codec]
    make_shard(root / "raw" / settings.shard_name(SHARD),
               {"long": {ext: encode(speech_track(seconds, 0), ext, args, rate)}})


def _asr(settings) -> None:
    from bench.feed_fakes import instant_asr
    from common.stages.engine import Engine
    from services.asr.stage import AsrStage
    from services.stages import PIPELINE

    stage = AsrStage(settings)
    instant_asr(stage)
    out = Engine(settings, PIPELINE, stage).attempt(SHARD, check_done=False)
    assert out.status == "done", out.reason


def _enhance(settings) -> None:
    from bench.feed_fakes import instant_annotator, instant_sidon
    from common.stages.engine import Engine
    from services.enhance.stage import EnhanceStage
    from services.stages import PIPELINE

    stage = EnhanceStage(settings)
    stage._backend = instant_sidon()
    stage._annotator = instant_annotator(stage.settings)
    out = Engine(settings, PIPELINE, stage).attempt(SHARD, check_done=False)
    assert out.status == "done", out.reason


def _settings(root: Path):
    from services.stages import PipelineSettings

    return PipelineSettings(input_url=str(root / "raw"), output_url=str(root / "out"),
                            scratch_dir=str(root / "scratch"))


def _child(*args: str, timeout: float) -> dict:
    out = subprocess.run([sys.executable, "-m", "bench.feed_memory", *args], capture_output=True,
                         text=True, timeout=timeout, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"feed_memory {' '.join(args)}: {out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def measure(stage: str, seconds: float, codec: int = 0, timeout: float = 600) -> float:
    """Peak RSS in MB of a fresh process running ``stage`` on a ``seconds``-long member (the
    member is made, and asr run before enhance, each in a process of its own)."""
    with tempfile.TemporaryDirectory(prefix="onsei-feed-mem-") as d:
        _child("run:make", d, str(seconds), str(codec), timeout=timeout)
        peak = _child("run:asr", d, timeout=timeout)["peak_mb"]
        if stage == "enhance":
            peak = _child("run:enhance", d, timeout=timeout)["peak_mb"]
        return float(peak)


def main(argv: list[str]) -> None:
    if not argv[0].startswith("run:"):  # python -m bench.feed_memory STAGE SECONDS
        print(json.dumps({"peak_mb": measure(argv[0], float(argv[1]))}))
        return
    import torch

    torch.set_num_threads(1)
    root = Path(argv[1])
    settings = _settings(root)
    if argv[0] == "run:make":
        _shard(root, settings, float(argv[2]), int(argv[3]))
    else:
        {"run:asr": _asr, "run:enhance": _enhance}[argv[0]](settings)
    print(json.dumps({"peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))


if __name__ == "__main__":
    main(sys.argv[1:])
