"""Quality annotations (docs/quality.md): their cost beside the enhance stage on CPU with RNNoise,
DNSMOS ordering of clean vs 0 dB SNR speech, the multi_speaker check on known speakers.

Cost: one shard of segments (espeak sentences in white noise at 5 dB, 2-20 s, one 48 kHz WAV
member each, kept whole by its ASR line) goes through the whole enhance stage with RNNoise
(decode, restoration, 24 kHz FLAC, tar) with annotations off, then on; the difference is the
annotations' cost. Fidelity re-transcription is timed apart on a few segments and counted at the
default 5 % sample; each annotation is also timed alone. Times are CPU seconds of this process
(``time.process_time``, all threads): the machine is shared, so wall time would measure the
neighbours.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import numpy as np

SR = 16000


def _sentences(n: int) -> list[np.ndarray]:
    from fixtures.speech_corpus import EN_SENTENCES
    from fixtures.speechgen import synth

    out = []
    for s in (EN_SENTENCES * 4)[:n]:
        x = synth(s, rate=48000)
        out.append((0.5 * x / np.abs(x).max()).astype(np.float32))
    return out


def _noisy(clean: np.ndarray, snr_db: float, seed: int) -> np.ndarray:
    from fixtures.speechgen import add_noise

    return add_noise(clean, snr_db, seed)


def _segments(quick: bool) -> tuple[list[np.ndarray], list[str]]:
    """2-20 s segments of consecutive espeak sentences in white noise at 5 dB SNR, 48 kHz."""
    from fixtures.speech_corpus import EN_SENTENCES

    sent = _sentences(20)
    rng = np.random.default_rng(3)
    segs, texts = [], []
    for i in range(8 if quick else 24):
        target, parts, words, j = rng.uniform(2, 20) * 48000, [], [], int(rng.integers(20))
        while sum(p.size for p in parts) < target:
            parts.append(sent[j % 20])
            words.append(EN_SENTENCES[j % 20])
            j += 1
        segs.append(_noisy(np.concatenate(parts), 5.0, i))
        texts.append(" ".join(words))
    return segs, texts


def _shard(d: Path, segs: list[np.ndarray], texts: list[str]) -> dict[str, Path]:
    """A raw shard (one 48 kHz WAV member per segment) and its ASR JSONL keeping each whole."""
    from fixtures.speechgen import make_shard, wav_bytes

    make_shard(d / "shard.tar", {f"m{i:03d}": {"wav": wav_bytes(x, 48000)}
                                 for i, x in enumerate(segs)})
    lines = [{"key": f"m{i:03d}", "status": "ok", "language": "en",
              "segments": [{"idx": 0, "start": 0.0, "end": x.size / 48000, "text": t,
                            "kept": True}]}
             for i, (x, t) in enumerate(zip(segs, texts))]
    (d / "asr.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    return {"shard": d / "shard.tar", "asr": d / "asr.jsonl"}


def _stage_cpu(settings, inputs: dict[str, Path], workdir: Path) -> float:
    """CPU seconds of the whole enhance stage on the shard (models loaded beforehand)."""
    from services.enhance.stage import EnhanceStage

    stage = EnhanceStage(settings)
    stage.load()
    t0 = time.process_time()
    stage.process(0, inputs, workdir)
    return time.process_time() - t0


def cost(quick: bool) -> list[dict]:
    """The enhance stage (RNNoise, CPU) on one shard with annotations off, then on; fidelity is
    timed apart on a few segments and counted at its default 5 % sample."""
    import shutil
    import tempfile

    import torch

    if shutil.which("espeak-ng") is None:
        return []
    from common.shards.audio import resample
    from services.enhance.quality.dnsmos import Dnsmos
    from services.enhance.quality.fidelity import FidelityChecker, whisper_loader
    from services.enhance.quality.prosody import measure
    from services.enhance.quality.speaker import SpeakerEncoder
    from services.enhance.settings import EnhanceSettings

    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    segs, texts = _segments(quick)
    seconds = sum(s.size for s in segs) / 48000
    cache = os.environ.get("ONSEI_TEST_MODEL_CACHE",
                           os.path.expanduser("~/.cache/onsei/models"))
    base = EnhanceSettings(asr_model="bundled:whisper-base", model_cache=cache,
                           asr_compute_type="int8", enhance_backend="rnnoise", enhance_device="cpu",
                           quality_fidelity_fraction=0.0)
    with tempfile.TemporaryDirectory(prefix="onsei-bench-quality-") as d:
        inputs = _shard(Path(d), segs, texts)
        t_off = _stage_cpu(base.model_copy(update={"quality_annotations": False}), inputs,
                           Path(d) / "off")
        t_on = _stage_cpu(base.model_copy(update={"quality_annotations": True}), inputs,
                          Path(d) / "on")
    ins16 = [resample(x, 48000, SR) for x in segs]  # each part apart, on the input audio
    parts = {}
    dnsmos, speaker = Dnsmos(), SpeakerEncoder()
    for name, score in (("DNSMOS before + after", lambda c: dnsmos.score(c + c)),
                        ("speaker encoder", speaker.score),
                        ("prosody (speech fraction, pitch, rate, SNR)",
                         lambda c: [measure(x, x, t, "en") for x, t in zip(c, texts)])):
        score(ins16[:1])  # load + warm-up
        t0 = time.process_time()
        score(ins16)
        parts[name] = time.process_time() - t0
    fc = FidelityChecker(loader=whisper_loader(base, device="cpu"))
    fc.check([(ins16[0][:SR], "", "en")])  # load + warm-up
    n_fid = 3 if quick else 8
    t0 = time.process_time()
    fc.check([(ins16[i], texts[i], "en") for i in range(n_fid)])
    fid_seconds = sum(ins16[i].size for i in range(n_fid)) / SR
    t_fid = (time.process_time() - t0) / fid_seconds * seconds * 0.05  # at the 5 % default
    extra = t_on - t_off + t_fid
    rows = [{"name": f"quality: enhance stage CPU s, annotations on (+ fidelity at 5 %) - off, "
                     f"over off (RNNoise, {seconds:.0f} s)",
             "ours": round(extra, 2), "baseline": round(t_off, 2),
             "ratio": round(extra / t_off, 3), "goal": "ratio <= 0.10", "unit": "CPU s"}]
    rows += [{"name": f"quality: {name} / enhance stage off", "ours": round(t, 2),
              "baseline": round(t_off, 2), "ratio": round(t / t_off, 3), "goal": "info",
              "unit": "CPU s"} for name, t in parts.items()]
    rows.append({"name": "quality: fidelity at 5 % (Whisper base int8) / enhance stage off",
                 "ours": round(t_fid, 2), "baseline": round(t_off, 2),
                 "ratio": round(t_fid / t_off, 3), "goal": "info", "unit": "CPU s"})
    return rows


def ordering(quick: bool) -> list[dict]:
    """Clean speech must score above the same speech at 0 dB SNR (DNSMOS OVRL), clip by clip."""
    import shutil

    from common.shards.audio import resample
    from fixtures.known_speakers import sphinx_lines
    from services.enhance.quality.dnsmos import Dnsmos

    clips = []
    if shutil.which("espeak-ng"):
        clips += [resample(x, 48000, SR) for x in _sentences(6 if quick else 20)]
    clips += [x for v in sphinx_lines().values() for x in v]  # real recorded speech
    if not clips:
        return []
    noisy = [0.5 * _noisy(c, 0.0, i) for i, c in enumerate(clips)]
    scores = Dnsmos().score(clips + noisy)
    clean, bad = scores[:len(clips)], scores[len(clips):]
    wins = sum(c.ovrl > n.ovrl for c, n in zip(clean, bad))
    return [{"name": f"quality: DNSMOS OVRL clean > same clip at 0 dB SNR ({len(clips)} clips)",
             "ours": round(float(np.mean([c.ovrl for c in clean])), 2),
             "baseline": round(float(np.mean([n.ovrl for n in bad])), 2),
             "ratio": round(wins / len(clips), 3), "goal": "ratio (rate) = 1.0",
             "unit": "mean OVRL"}]


def speakers(quick: bool) -> list[dict]:
    """multi_speaker at the default threshold on recordings with known speakers."""
    from fixtures.known_speakers import cases
    from services.enhance.quality.speaker import SpeakerEncoder
    from services.enhance.settings import EnhanceSettings

    cs = cases()
    if not cs:
        return []
    thr = EnhanceSettings().quality_speaker_threshold
    scores = SpeakerEncoder().score([c.audio for c in cs])
    rows = []
    groups = {"natural (pocketsphinx, pyannote)": {"pocketsphinx", "pyannote"},
              "fillets character voices": {"fillets"}}
    for label, srcs in groups.items():
        mine = [(c, s) for c, s in zip(cs, scores) if c.source in srcs]
        if not mine:
            continue
        two = [s for c, s in mine if c.speakers == 2]
        one = [s for c, s in mine if c.speakers == 1]
        flag = [s.consistency is not None and s.consistency < thr for s in two]
        false = [s.consistency is not None and s.consistency < thr for s in one]
        rows.append({"name": f"quality: multi_speaker flagged, two vs one speaker, {label} "
                             f"({len(two)} / {len(one)} segments, threshold {thr:g})",
                     "ours": round(float(np.mean(flag)), 3),
                     "baseline": round(float(np.mean(false)), 3),
                     "ratio": None, "goal": "ours high, baseline low", "unit": "flag rate"})
    return rows


ROWS = [ordering, speakers, cost]
