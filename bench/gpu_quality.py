"""GPU cost of the quality annotations (run by gpu_quality.sh), to set beside gpu_enhance's
Sidon-sized real-time factor: DNSMOS (torch port, before + after), the speaker encoder and the
fidelity re-transcription (Whisper, every segment; the stage samples 5 %), each in audio seconds
per second on the device. Segments are 2-20 s of espeak speech when espeak-ng is there, else
noise-modulated tones (the DNSMOS and speaker costs do not depend on content; fidelity is then
skipped). Prints one JSON object per line (and ``$OUT/gpu_quality.jsonl`` when set).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from bench.gpu_report import jsonl_emitter

SR = 16000


def _segments(n: int, seed: int = 0) -> tuple[list[np.ndarray], list[str]]:
    from fixtures.speech_corpus import EN_SENTENCES
    from fixtures.speechgen import have_espeak, synth

    rng = np.random.default_rng(seed)
    if have_espeak():
        lines = [synth(s) for s in EN_SENTENCES]
        clips, texts = [], []
        for _ in range(n):
            target, parts, words = rng.uniform(2, 20) * SR, [], []
            while sum(p.size for p in parts) < target:
                j = int(rng.integers(len(lines)))
                parts.append(lines[j])
                words.append(EN_SENTENCES[j])
            clips.append(np.concatenate(parts))
            texts.append(" ".join(words))
        return clips, texts
    clips = []
    for _ in range(n):
        t = np.arange(int(rng.uniform(2, 20) * SR)) / SR
        env = 0.5 + 0.5 * np.sin(2 * np.pi * 3 * t)
        clips.append((0.2 * env * np.sin(2 * np.pi * 180 * t)).astype(np.float32))
    return clips, []


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--segments", type=int, default=64)
    ap.add_argument("--fidelity-model", default="bundled:whisper-base")
    ap.add_argument("--tiny", action="store_true", help="8 segments (CPU dry run)")
    args = ap.parse_args()
    emit = jsonl_emitter("gpu_quality")
    from services.enhance.quality.dnsmos import Dnsmos
    from services.enhance.quality.fidelity import FidelityChecker, whisper_loader
    from services.enhance.quality.speaker import SpeakerEncoder
    from services.whisper.settings import WhisperSettings

    clips, texts = _segments(8 if args.tiny else args.segments)
    seconds = sum(c.size for c in clips) / SR
    emit({"row": "segments", "n": len(clips), "audio_seconds": round(seconds, 1),
          "device": args.device})

    def timed(name: str, fn, audio_seconds: float) -> None:
        fn()  # warm-up (and load)
        t0 = time.perf_counter()
        fn()
        wall = time.perf_counter() - t0
        emit({"row": name, "wall_s": round(wall, 3),
              "x_realtime": round(audio_seconds / wall, 1)})

    d = Dnsmos(device=args.device, batch=64)
    timed("dnsmos_before_and_after", lambda: d.score(clips + clips), seconds)
    spk = SpeakerEncoder(device=args.device)
    timed("speaker", lambda: spk.score(clips), seconds)
    if texts:
        s = WhisperSettings(asr_model=args.fidelity_model)
        fc = FidelityChecker(loader=whisper_loader(s, device=args.device))
        few = list(zip(clips[:16], texts[:16], ["en"] * 16))
        timed("fidelity_every_segment", lambda: fc.check(few), sum(c.size for c in clips[:16]) / SR)


if __name__ == "__main__":
    main()
