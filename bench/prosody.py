"""The prosody annotations and the speech-presence rule against known answers (docs/quality.md).

- pitch: tones and a gliding harmonic "vowel" at set f0 (known mean and spread); espeak speech
  against WORLD's slower Harvest tracker as a reference;
- SNR: espeak sentences and pocketsphinx's LibriVox lines with white noise at set SNRs (the
  LibriVox lines carry their own noise floor, so their true SNR is somewhat below the set one);
- speech presence: ``speech_fraction`` of single-voice speech from the three real sources
  (pocketsphinx, pyannote's sample, fillets-ng) and of non-speech (digital silence, a full-scale
  square wave, sines, white noise), each as is and after RNNoise at 48 kHz; and the
  ``multi_speaker`` flag rate on the same single-voice clips (one speaker: every flag is false);
- cost: CPU seconds of :func:`measure` per second of audio.

    python -m bench.prosody [pitch] [snr] [presence] [multi_speaker] [cost]
"""

from __future__ import annotations

import json
import time

import numpy as np

SR = 16000


def _tone(f0: float, seconds: float = 3.0) -> np.ndarray:
    t = np.arange(int(seconds * SR)) / SR
    return (0.5 * np.sin(2 * np.pi * f0 * t)).astype(np.float32)


def pitch_rows() -> list[dict]:
    import pyworld

    from fixtures.signals import vowel
    from services.enhance.quality.prosody import pitch

    rows = []
    f0s = [80.0, 100.0, 150.0, 220.0, 300.0, 450.0]
    tone_err = [abs(pitch(_tone(f))[0] - f) / f for f in f0s]
    rows.append({"check": "pitch: tones 80-450 Hz, mean error", "max_rel": max(tone_err)})
    mean_err, std_err = [], []
    for f in f0s:
        m, s = pitch(vowel(f, 0.1 * f))
        mean_err.append(abs(m - f) / f)
        std_err.append(abs(s - 0.1 * f / np.sqrt(2)) / (0.1 * f / np.sqrt(2)))
    rows.append({"check": "pitch: gliding vowel (f0 +-10 % at 2 Hz), 80-450 Hz",
                 "mean_max_rel": max(mean_err), "std_max_rel": max(std_err)})
    from fixtures.speech_corpus import EN_SENTENCES
    from fixtures.speechgen import synth

    diffs, sdiffs = [], []
    for i, text in enumerate(EN_SENTENCES[:10]):
        x = synth(text, voice=["en+m3", "en+f4"][i % 2])
        m, s = pitch(x)
        f0, _ = pyworld.harvest(x.astype(np.float64), SR, f0_floor=60.0, f0_ceil=700.0,
                                frame_period=10.0)
        v = f0[f0 > 0]
        diffs.append(abs(m - v.mean()) / v.mean())
        sdiffs.append(abs(s - v.std()))
    rows.append({"check": "pitch: espeak (10 sentences, 2 voices) vs Harvest",
                 "mean_rel_median": float(np.median(diffs)), "mean_rel_max": max(diffs),
                 "std_abs_hz_median": float(np.median(sdiffs))})
    return rows


def snr_rows() -> list[dict]:
    from fixtures.known_speakers import sphinx_lines
    from fixtures.speech_corpus import EN_SENTENCES
    from fixtures.speechgen import add_noise, synth
    from services.enhance.quality.prosody import snr_db

    sets = {"espeak": [synth(t) for t in EN_SENTENCES[:10]]}
    v = sphinx_lines()
    if v:
        sets["librivox"] = v["librivox"]
    rows = []
    for name, clips in sets.items():
        for snr in (0.0, 5.0, 10.0, 20.0, 30.0):
            err = [snr_db(add_noise(c, snr, i)) - snr for i, c in enumerate(clips)]
            rows.append({"check": f"snr: {name} at {snr:g} dB", "n": len(err),
                         "mean_err_db": float(np.mean(err)),
                         "max_abs_err_db": float(np.max(np.abs(err)))})
    return rows


def _restore(x: np.ndarray) -> np.ndarray:
    from bench.speaker_labels import _restore as r

    return r(x)


def presence_rows(thresholds: tuple[float, ...] = (0.05, 0.1, 0.2, 0.3),
                  speaker_threshold: float = 0.84) -> list[dict]:
    from fixtures.known_speakers import cases
    from services.enhance.quality.prosody import speech_fraction
    from services.enhance.quality.speaker import SpeakerEncoder

    one = [c for c in cases() if c.speakers == 1]
    t = np.arange(6 * SR) / SR
    rng = np.random.default_rng(0)
    other = {"digital silence 6 s": np.zeros(6 * SR, np.float32),
             "square 220 Hz full scale": np.sign(np.sin(2 * np.pi * 220 * t)).astype(np.float32),
             "sine 150 Hz": _tone(150.0, 6.0), "sine 1 kHz": _tone(1000.0, 6.0),
             "white noise": (0.1 * rng.standard_normal(6 * SR)).astype(np.float32)}
    rows = []
    enc = SpeakerEncoder()
    for restored in (False, True):
        tag = "after RNNoise" if restored else "as is"
        for src in sorted({c.source for c in one}):
            clips = [c.audio for c in one if c.source == src]
            if restored:
                clips = [_restore(c) for c in clips]
            fr = [speech_fraction(c) for c in clips]
            sc = enc.score(clips)
            judged = [s.consistency for s in sc if s.consistency is not None]
            rows.append({"check": f"speech: one-voice {src} clips, {tag}", "n": len(fr),
                         "min_fraction": min(fr), "median_fraction": float(np.median(fr)),
                         **{f"below_{t:g}": int(sum(f < t for f in fr)) for t in thresholds},
                         "multi_speaker_judged": len(judged),
                         f"multi_speaker_flagged_{speaker_threshold:g}":
                             int(sum(c < speaker_threshold for c in judged))})
        for name, x in other.items():
            rows.append({"check": f"speech: {name}, {tag}",
                         "fraction": speech_fraction(_restore(x) if restored else x)})
    return rows


def multi_speaker_rows(thresholds: tuple[float, ...] = (0.7, 0.75, 0.8, 0.84)) -> list[dict]:
    """``multi_speaker`` flag rates on natural speech (pocketsphinx, pyannote; docs/quality.md's
    cases), as is and with white noise at 20 dB then RNNoise, at several thresholds."""
    from fixtures.known_speakers import cases
    from fixtures.speechgen import add_noise
    from services.enhance.quality.speaker import SpeakerEncoder

    cs = [c for c in cases() if c.source != "fillets"]
    enc = SpeakerEncoder()
    rows = []
    for restored in (False, True):
        clips = [_restore(add_noise(c.audio, 20.0, i)) if restored else c.audio
                 for i, c in enumerate(cs)]
        cons = [s.consistency for s in enc.score(clips)]
        for t in thresholds:
            two = [x < t for x, c in zip(cons, cs) if x is not None and c.speakers == 2]
            one = [x < t for x, c in zip(cons, cs) if x is not None and c.speakers == 1]
            rows.append({"check": f"multi_speaker at {t:g}, natural speech, "
                                  f"{'20 dB + RNNoise' if restored else 'as is'}",
                         "two_flagged": f"{sum(two)}/{len(two)}",
                         "one_flagged": f"{sum(one)}/{len(one)}"})
    return rows


def cost_row() -> dict:
    from fixtures.speech_corpus import EN_SENTENCES
    from fixtures.speechgen import add_noise, synth
    from services.enhance.quality.prosody import measure

    clips = [add_noise(synth(s), 10.0, i) for i, s in enumerate(EN_SENTENCES[:10])]
    measure(clips[0], clips[0], "", "en")  # load + warm-up
    t0 = time.process_time()
    for c, s in zip(clips, EN_SENTENCES):
        measure(c, c, s, "en")
    cpu = time.process_time() - t0
    secs = sum(c.size for c in clips) / SR
    return {"check": "cost: measure() CPU s per audio s", "audio_s": secs,
            "cpu_per_audio_s": cpu / secs}


def main() -> None:
    import sys

    parts = {"pitch": pitch_rows, "snr": snr_rows, "presence": presence_rows,
             "multi_speaker": multi_speaker_rows,
             "cost": lambda: [cost_row()]}
    rows = []
    for name in sys.argv[1:] or list(parts):
        rows += parts[name]()
    for r in rows:
        print(json.dumps({k: round(v, 4) if isinstance(v, float) else v for k, v in r.items()}))


if __name__ == "__main__":
    main()
