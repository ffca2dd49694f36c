"""Train the speech/music mask of research/wild/music_mask_net.py on CPU, from data the bench never
evaluates on.

- music: fillets-ng-data's tracks (installed, /usr/share/games/fillets-ng/music) and
  frozen-bubble-data's three music tracks (fetched as fixtures/nonspeech.py does); the bench's
  bed tracks (pushover, singularity, hyperrogue) are held out;
- speech: espeak-ng saying fillets-ng's English dialogue lines in several voices and speeds,
  fillets-ng's recorded English voice lines, and pocketsphinx-testdata's three raw clips
  (goforward, numbers, something); the bench's LibriVox and card readings are held out.

Each step mixes random 4 s crops in the STFT domain (linear: the mix's STFT is the sum) at
-2 to 18 dB (active speech level over the music's power), at a random level, 1 in 10 with no
music. Loss: signal approximation on compressed magnitude (``(mask |Y|)^0.3`` against
``|S|^0.3``). Saves float16 ``.npz`` weights for :class:`research.wild.music_mask_net.MaskNet`.

``nice -n 5 python -m research.wild.music_mask_train --minutes 18 ``
(one thread; the seed fixes the data and the initial weights, not the step count).
"""

from __future__ import annotations

import argparse
import re
import subprocess
import time
from pathlib import Path

import numpy as np

from research.wild.music_mask_net import BINS, DILATIONS, FLOOR, KERNEL, SR, WEIGHTS, stft

FILLETS = Path("/usr/share/games/fillets-ng")
PSPHINX = Path("/usr/share/pocketsphinx/test/data")
VOICES = ("en-us", "en", "en-gb-x-rp", "en-gb-scotland", "en-029", "en-us+f2", "en-us+m3",
          "en+f4", "en-gb-x-rp+m1", "en+f3")
CROP = 250  # frames: 4 s
HIDDEN = 128


def _decode(path: Path) -> np.ndarray | None:
    from fixtures.nonspeech import _read

    return _read(path)


def music() -> list[np.ndarray]:
    from fixtures.nonspeech import fetch

    paths = sorted((FILLETS / "music").glob("*.ogg"))
    fb = fetch("frozen-bubble-data") / "usr/share/games/frozen-bubble/snd"
    paths += [fb / f"{n}.ogg" for n in ("frozen-mainzik-1p", "frozen-mainzik-2p", "introzik")]
    return [a for p in paths if (a := _decode(p)) is not None and a.size > SR * 4]


def _espeak(text: str, voice: str, speed: int) -> np.ndarray:
    from common.shards.audio import decode_audio

    wav = subprocess.run(["espeak-ng", "-v", voice, "-s", str(speed), "--stdout", text],
                         capture_output=True, check=True).stdout
    return np.asarray(decode_audio(wav, SR), np.float32)


def speech(rng: np.random.Generator, espeak_lines: int) -> list[np.ndarray]:
    lines = []
    for p in sorted((FILLETS / "script").glob("*/dialogs_en.lua")):
        lines += re.findall(r'dialogId\("[^"]*", *"[^"]*", *"([^"]{25,})"\)', p.read_text())
    out = []
    for i, j in enumerate(rng.permutation(len(lines))[:espeak_lines]):
        out.append(_espeak(lines[j], VOICES[i % len(VOICES)], int(rng.integers(130, 200))))
    for p in sorted(FILLETS.glob("sound/*/en/*.ogg")):
        a = _decode(p)
        if a is not None and a.size > SR // 2:
            out.append(a)
    for name in ("goforward", "numbers", "something"):
        raw = np.fromfile(PSPHINX / f"{name}.raw", dtype="<i2").astype(np.float32) / 32768
        out.append(raw)
    return out


def _join(clips: list[np.ndarray], rng: np.random.Generator, pauses: bool) -> np.ndarray:
    parts = []
    for i in rng.permutation(len(clips)):
        a = clips[i] / (np.sqrt(np.mean(clips[i] ** 2)) + 1e-9) * 0.05
        parts.append(a)
        if pauses:  # sentences with pauses between them, as long-form speech has
            parts.append(np.zeros(int(rng.uniform(0.2, 1.2) * SR), np.float32))
    return np.concatenate(parts).astype(np.float32)


def build(seed: int, espeak_lines: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(speech STFT, its frames' active flags, music STFT)."""
    rng = np.random.default_rng(seed)
    s = _join(speech(rng, espeak_lines), rng, True)
    m = _join(music(), rng, False)
    S, M = stft(s), stft(m)
    p = (np.abs(S) ** 2).sum(axis=1)
    active = p > p.max() * 1e-4  # within 40 dB of the loudest frame
    print(f"speech {s.size / SR / 60:.1f} min, music {m.size / SR / 60:.1f} min", flush=True)
    return S, active, M


def net() -> object:
    import torch
    from torch import nn

    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.inp = nn.Conv1d(BINS, HIDDEN, KERNEL, padding=DILATIONS[0],
                                 dilation=DILATIONS[0])
            self.res = nn.ModuleList(nn.Conv1d(HIDDEN, HIDDEN, KERNEL, padding=d, dilation=d)
                                     for d in DILATIONS[1:])
            self.out = nn.Conv1d(HIDDEN, BINS, 1)

        def forward(self, x: torch.Tensor) -> torch.Tensor:  # (batch, bins, frames)
            h = torch.relu(self.inp(x))
            for c in self.res:
                h = torch.relu(h + c(h))
            return FLOOR + (1 - FLOOR) * torch.sigmoid(self.out(h))

    return Net()


def batch(S: np.ndarray, active: np.ndarray, M: np.ndarray, rng: np.random.Generator,
          n: int) -> tuple[np.ndarray, np.ndarray]:
    """(mixture magnitudes, speech magnitudes), each (n, CROP, BINS)."""
    ys, ss = [], []
    for _ in range(n):
        a = int(rng.integers(0, S.shape[0] - CROP))
        b = int(rng.integers(0, M.shape[0] - CROP))
        s, m = S[a:a + CROP], M[b:b + CROP]
        act = active[a:a + CROP]
        ps = (np.abs(s[act]) ** 2).sum(axis=1).mean() if act.any() else 1e-6
        pm = (np.abs(m) ** 2).sum(axis=1).mean() + 1e-12
        snr = rng.uniform(-2, 18)
        g = 0.0 if rng.random() < 0.1 else np.sqrt(ps / pm / 10 ** (snr / 10))
        level = 10 ** (rng.uniform(-25, 10) / 20)
        ys.append(np.abs(s + g * m) * level)
        ss.append(np.abs(s) * level)
    return np.stack(ys), np.stack(ss)


def train(minutes: float, out: Path, seed: int, espeak_lines: int) -> None:
    import torch

    from research.wild.music_mask_net import features

    torch.set_num_threads(1)
    torch.manual_seed(seed)
    S, active, M = build(seed, espeak_lines)
    rng = np.random.default_rng(seed + 1)
    model = net()
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)  # type: ignore[attr-defined]
    t0, step, avg = time.monotonic(), 0, None
    while time.monotonic() - t0 < minutes * 60:
        y, s = batch(S, active, M, rng, 12)
        feats = torch.from_numpy(np.stack([features(v) for v in y])).transpose(1, 2)
        mask = model(feats).transpose(1, 2)  # type: ignore[operator]
        yt, st = torch.from_numpy(y), torch.from_numpy(s)
        loss = ((mask * yt + 1e-6) ** 0.3 - (st + 1e-6) ** 0.3).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        step += 1
        avg = loss.item() if avg is None else 0.98 * avg + 0.02 * loss.item()
        if step % 100 == 0:
            print(f"step {step} {time.monotonic() - t0:.0f}s loss {avg:.5f}", flush=True)
            save(model, out)
    save(model, out)
    print(f"done: {step} steps, saved {out}", flush=True)


def save(model: object, out: Path) -> None:
    convs = [model.inp, *model.res, model.out]  # type: ignore[attr-defined]
    arrays = {}
    for i, c in enumerate(convs):
        arrays[f"w{i}"] = c.weight.detach().numpy().astype(np.float16)
        arrays[f"b{i}"] = c.bias.detach().numpy().astype(np.float16)
    out.parent.mkdir(parents=True, exist_ok=True)
    np.savez(out, **arrays)  # type: ignore[arg-type]


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--minutes", type=float, default=18.0)
    ap.add_argument("--out", type=Path, default=WEIGHTS)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--espeak-lines", type=int, default=400)
    a = ap.parse_args()
    train(a.minutes, a.out, a.seed, a.espeak_lines)
