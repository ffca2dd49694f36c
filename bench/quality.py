"""Quality annotations (docs/quality.md): their cost beside the enhance stage on CPU with RNNoise,
DNSMOS ordering of clean vs 0 dB SNR speech, the multi_speaker check on known speakers.

Cost: the same segments (espeak sentences in white noise at 5 dB, 2-20 s) go through the enhance
engine with RNNoise plus the writer's work (24 kHz resample, FLAC encode), then through the
annotator (16 kHz resample of input and output, DNSMOS on both, speaker encoder on the output);
fidelity re-transcription is timed on a few segments and counted at the default 5 % sample.
Times are CPU seconds of this process (``time.process_time``, all threads): the machine is shared,
so wall time would measure the neighbours. The stage's input decode is not counted, which makes
the ratio an upper bound.
"""

from __future__ import annotations

import os
import time

import numpy as np

SR = 16000


def _sentences(n: int) -> list[np.ndarray]:
    from bench.speech_corpus import EN_SENTENCES
    from bench.speechgen import synth

    out = []
    for s in (EN_SENTENCES * 4)[:n]:
        x = synth(s, rate=48000)
        out.append((0.5 * x / np.abs(x).max()).astype(np.float32))
    return out


def _noisy(clean: np.ndarray, snr_db: float, seed: int) -> np.ndarray:
    from bench.speechgen import add_noise

    return add_noise(clean, snr_db, seed)


def cost(quick: bool) -> list[dict]:
    import shutil

    import torch

    if shutil.which("espeak-ng") is None:
        return []
    from bench.speech_corpus import EN_SENTENCES
    from common.audio import flac_bytes, resample
    from services.enhance.chunking import ChunkGeometry, pad_segment
    from services.enhance.denoise import RNNoiseBackend
    from services.enhance.pipeline import Enhancer
    from services.enhance.quality.annotate import AnnotationInput, Annotator
    from services.enhance.quality.fidelity import FidelityChecker, whisper_loader
    from services.enhance.segments import CutSegment, SegmentSpec
    from services.enhance.settings import EnhanceSettings

    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    sent = _sentences(20)
    rng = np.random.default_rng(3)
    segs, texts = [], []
    for i in range(8 if quick else 24):  # 2-20 s segments of consecutive sentences
        target, parts, words, j = rng.uniform(2, 20) * 48000, [], [], int(rng.integers(20))
        while sum(p.size for p in parts) < target:
            parts.append(sent[j % 20])
            words.append(EN_SENTENCES[j % 20])
            j += 1
        segs.append(_noisy(np.concatenate(parts), 5.0, i))
        texts.append(" ".join(words))
    seconds = sum(s.size for s in segs) / 48000
    backend = RNNoiseBackend()
    geom = ChunkGeometry.from_seconds(48000, 10.0, 0.5, 0.04, backend.hop)
    cut = [CutSegment(i, SegmentSpec("k", i, 0.0, 1.0, texts[i], "en"), x.size,
                      pad_segment(x, 0, x.size, geom.margin)) for i, x in enumerate(segs)]
    t0 = time.process_time()
    outs = []
    for seg, out in Enhancer(backend, geom, 4).run(cut):
        flac_bytes(resample(out, 48000, 24000), 24000)  # the writer's work
        outs.append(out)
    t_enh = time.process_time() - t0

    cache = os.environ.get("ONSEI_TEST_MODEL_CACHE",
                           os.path.expanduser("~/.cache/onsei/models"))
    s = EnhanceSettings(asr_model="bundled:whisper-base", model_cache=cache, asr_compute_type="int8",
                 quality_fidelity_fraction=0.0)
    ann = Annotator(s)
    ann.load()
    ann.annotate([AnnotationInput("w", "", "en", segs[0][:48000], 48000, outs[0][:48000],
                                  48000)])  # warm-up
    ann.seconds = 0.0
    items = [AnnotationInput(f"k_{i:04d}", texts[i], "en", segs[i], 48000, outs[i], 48000)
             for i in range(len(segs))]
    t0 = time.process_time()
    ann.dnsmos.score([resample(x, 48000, SR) for x in segs + outs])
    t_mos = time.process_time() - t0
    t0 = time.process_time()
    ann.speaker.score([resample(x, 48000, SR) for x in outs])
    t_spk = time.process_time() - t0
    t0 = time.process_time()
    ann.annotate(items)
    t_ann = time.process_time() - t0
    fc = FidelityChecker(loader=whisper_loader(s, device="cpu"))
    fc.check([(resample(outs[0][:48000], 48000, SR), "", "en")])  # load + warm-up
    n_fid = 3 if quick else 8
    t0 = time.process_time()
    fc.check([(resample(outs[i], 48000, SR), texts[i], "en") for i in range(n_fid)])
    fid_seconds = sum(outs[i].size for i in range(n_fid)) / 48000
    t_fid = (time.process_time() - t0) / fid_seconds * seconds * 0.05  # at the 5 % default
    total = t_ann + t_fid
    return [
        {"name": f"quality: annotation cost / enhance stage time (RNNoise, CPU, {seconds:.0f} s)",
         "ours": round(total, 2), "baseline": round(t_enh, 2), "ratio": round(total / t_enh, 3),
         "goal": "ratio <= 0.10", "unit": "CPU s"},
        {"name": "quality: DNSMOS before + after / enhance stage time",
         "ours": round(t_mos, 2), "baseline": round(t_enh, 2), "ratio": round(t_mos / t_enh, 3),
         "goal": "info", "unit": "CPU s"},
        {"name": "quality: speaker encoder / enhance stage time",
         "ours": round(t_spk, 2), "baseline": round(t_enh, 2), "ratio": round(t_spk / t_enh, 3),
         "goal": "info", "unit": "CPU s"},
        {"name": "quality: fidelity at 5 % (Whisper base int8) / enhance stage time",
         "ours": round(t_fid, 2), "baseline": round(t_enh, 2), "ratio": round(t_fid / t_enh, 3),
         "goal": "info", "unit": "CPU s"},
    ]


def ordering(quick: bool) -> list[dict]:
    """Clean speech must score above the same speech at 0 dB SNR (DNSMOS OVRL), clip by clip."""
    import shutil

    from bench.known_speakers import sphinx_lines
    from common.audio import resample
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
    from bench.known_speakers import cases
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
