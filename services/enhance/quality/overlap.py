"""Overlapping talkers: ``quality.overlap``, the share of a segment's voiced time where a second
voice sounds at once with the first (0-1).

A voice is periodic over a few tens of ms; two voices are two periodicities. Per 40 ms frame
(20 ms hop, 8 kHz), the best single period ``t1`` is cancelled (``y = x[n] - x[n + t1]``, the
period with the least normalised difference, 2.5-12.5 ms: 80-400 Hz) and what remains is
searched for a second period, away from ``t1``'s multiples and halves (the rest of an imperfect
cancellation of one voice repeats at ``t1`` too). A frame is two voices when one period cannot
explain it (its normalised difference at ``t1`` above ``SINGLE``) and the remainder is periodic
(below ``SECOND``). The test fires only where both voices are voiced at once with periods apart,
about ``DETECTED`` of the loud frames where two voices at one level talk throughout (the upper
quartile of real voices mixed at 0 dB): the overlap is the share of the frames within 30 dB of
the segment's loud ones that fire, over ``DETECTED``, at most 1.

Both difference functions are computed for every lag at once through FFT cross-correlation,
batched over the frames of all clips in torch, on the stage's device (``ONSEI_ENHANCE_DEVICE``).
How well it separates, on real voices mixed at 0, 5 and 10 dB, is in docs/quality.md (overlap):
a weak cue, so the filter on it is off by default.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import numpy as np

if TYPE_CHECKING:
    import torch

    from services.enhance.resampled import Resampled

SR = 8000
N = 320  # 40 ms frame
HOP = 160  # 20 ms
LMIN, LMAX = 20, 100  # periods of 2.5-12.5 ms
SINGLE = 0.2  # normalised difference at the best period above which one voice does not explain it
SECOND = 0.3  # the remainder's below which it holds a second period
QUIET_DB = 30.0
DETECTED = 0.083  # share of loud frames that fire where two voices overlap throughout
AWAY = 0.06  # relative distance from t1's multiples and halves a second period must keep
MIN_SECONDS = 0.5  # shorter segments are not scored (None)


def _difference(frames: torch.Tensor, n: int) -> torch.Tensor:
    """Normalised difference ``sum (a[i] - a[i + lag])^2 / (sum a^2 + sum a[. + lag]^2)`` of
    each row's first ``n`` samples against its samples ``lag`` later, for lags 0..LMAX:
    ``[rows, LMAX + 1]``. Rows must hold ``n + LMAX`` samples."""
    import torch

    size = 1 << int(np.ceil(np.log2(2 * n + LMAX)))
    head = frames[:, :n]
    cross = torch.fft.irfft(torch.conj(torch.fft.rfft(head, size))
                            * torch.fft.rfft(frames[:, :n + LMAX], size), size)[:, :LMAX + 1]
    sq = torch.nn.functional.pad(torch.cumsum(frames[:, :n + LMAX] ** 2, dim=1), (1, 0))
    lags = torch.arange(LMAX + 1, device=frames.device)
    later = sq[:, lags + n] - sq[:, lags]  # energy of the lagged window
    first = sq[:, n:n + 1]
    d: torch.Tensor = (first + later - 2 * cross) / (first + later).clamp_min(1e-9)
    return d


@dataclass(frozen=True)
class Frames:
    """An overlap test's frames of a clip on the 8 kHz grid (frame ``i`` starts at sample
    ``i * HOP``): whether the test fires on it (``fire``: here, one period fails to explain it
    and its remainder is periodic; a trained detector's frames say its own), its power, and
    whether it is within ``QUIET_DB`` of the clip's loud frames (``loud``, from that power).
    ``detected``: the share of loud frames the test fires on where two voices overlap
    throughout (``DETECTED`` here; 1 for a detector that finds overlap wherever it is)."""

    fire: np.ndarray
    power: np.ndarray
    loud: np.ndarray
    detected: float = DETECTED

    @property
    def two(self) -> np.ndarray:
        """Two voices at once: a loud frame the test fires on."""
        out: np.ndarray = self.loud & self.fire
        return out

    def share(self) -> float:
        """The overlap: the share of loud frames that fire, over ``detected``, at most 1."""
        two, loud = self.two, self.loud
        return min(1.0, float(two.sum() / loud.sum()) / self.detected) if loud.any() else 0.0

    def clip(self, start: float, seconds: float) -> Frames:
        """The frames of ``seconds`` of this clip from ``start`` (s), as the test would find
        them in that stretch alone: the frames on the nearest start of the clip's frame grid
        (20 ms) that lie in it, loud against the stretch's own loud frames."""
        first = max(0, round(start * SR / HOP))
        count = (int(seconds * SR) - (N + 2 * LMAX)) // HOP + 1
        sl = slice(first, max(first, min(self.power.size, first + count)))
        power = self.power[sl]
        return Frames(self.fire[sl], power, loud_frames(power), self.detected)


def frame_count(size8k: int) -> int:
    """How many frames the grid lays on ``size8k`` samples at 8 kHz."""
    return max(0, (size8k - (N + 2 * LMAX)) // HOP + 1)


def _unfold(x: np.ndarray, device: str) -> torch.Tensor:
    import torch

    t = torch.from_numpy(np.ascontiguousarray(x, np.float32)).to(device)
    return t.unfold(0, N + 2 * LMAX, HOP)


def empty() -> Frames:
    none = np.zeros(0, bool)
    return Frames(none, np.zeros(0, np.float32), none)


def _power(fr: torch.Tensor) -> np.ndarray:
    out: np.ndarray = (fr[:, :N] ** 2).mean(dim=1).cpu().numpy()
    return out


def powers(x: np.ndarray, device: str = "cpu") -> np.ndarray:
    """Each grid frame's power (``x`` at 8 kHz), as the pitch test measures it."""
    if frame_count(x.size) == 0:
        return np.zeros(0, np.float32)
    return _power(_unfold(x, device))


def frames(x: np.ndarray, device: str = "cpu") -> Frames:
    """The test's frames of ``x`` (8 kHz)."""
    import torch

    if frame_count(x.size) == 0:
        return empty()
    fr = _unfold(x, device)
    d1 = _difference(fr, N + LMAX)[:, LMIN:]
    best, j1 = d1.min(dim=1)
    t1 = j1 + LMIN
    idx = torch.arange(N + LMAX, device=fr.device)[None, :] + t1[:, None]
    rest = fr[:, :N + LMAX] - torch.gather(fr, 1, idx)
    d2 = _difference(rest, N)[:, LMIN:]
    ratio = torch.arange(LMIN, LMAX + 1, device=fr.device)[None, :] / t1[:, None]
    near = torch.zeros_like(d2, dtype=torch.bool)
    for m in (0.5, 1.0, 2.0, 3.0, 1 / 3):
        near |= (ratio - m).abs() < AWAY * max(1.0, m)
    second = torch.where(near, torch.full_like(d2, 9.0), d2).min(dim=1).values
    power = _power(fr)
    periodic = (best > SINGLE) & (second < SECOND)
    return Frames(periodic.cpu().numpy(), power, loud_frames(power))


def loud_frames(power: np.ndarray) -> np.ndarray:
    """``frames``' loudness gate over ``power`` (float32), in torch as there (the same
    quantile)."""
    import torch

    if power.size == 0:
        return np.zeros(0, bool)
    p = torch.from_numpy(power)
    out: np.ndarray = (p >= torch.quantile(p, 0.95) * 10 ** (-QUIET_DB / 10)).numpy()
    return out


def overlap(x16k: np.ndarray, device: str = "cpu") -> float | None:
    """The estimated share of a 16 kHz clip's voiced time with two voices (0-1, above);
    None below ``MIN_SECONDS``."""
    from common.shards.audio import resample

    if x16k.size < MIN_SECONDS * 16000:
        return None
    return frames(resample(x16k, 16000, SR), device).share()


class OverlapTest(Protocol):
    """What finds the frames where two voices sound at once: this pitch test, or a trained
    detector (``overlap_model.py``)."""

    def load(self) -> None: ...

    def frames(self, x: np.ndarray, rate: int, rs: Resampled) -> Frames:
        """The frames of ``x`` (at ``rate``; resampled through ``rs``)."""
        ...

    def info(self) -> str: ...


@dataclass(frozen=True)
class PitchTest:
    device: str = "cpu"

    def load(self) -> None:
        """Nothing to load: no weights."""

    def frames(self, x: np.ndarray, rate: int, rs: Resampled) -> Frames:
        return frames(rs(x, rate, SR), self.device)

    def info(self) -> str:
        return "pitch test (two periodicities at once)"
