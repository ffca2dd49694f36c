"""The numpy zero-phase high-pass equals a time-domain Butterworth filtfilt (no scipy)."""

from __future__ import annotations

import math

import numpy as np

from services.enhance.highpass import highpass_zero_phase

RATE = 48_000


def _biquad(x: np.ndarray, b: tuple[float, float, float], a: tuple[float, float]) -> np.ndarray:
    y = np.zeros_like(x)
    x1 = x2 = y1 = y2 = 0.0
    for i, v in enumerate(x.tolist()):
        out = b[0] * v + b[1] * x1 + b[2] * x2 - a[0] * y1 - a[1] * y2
        x2, x1, y2, y1 = x1, v, y1, out
        y[i] = out
    return y


def _reference_filtfilt(x: np.ndarray, fc: float, pad: int) -> np.ndarray:
    """2nd-order Butterworth high-pass by the bilinear transform (pre-warped), run forward and
    backward over an odd extension: the textbook filtfilt, one sample at a time."""
    k = math.tan(math.pi * fc / RATE)
    norm = 1 / (1 + math.sqrt(2) * k + k * k)
    b = (norm, -2 * norm, norm)
    a = (2 * (k * k - 1) * norm, (1 - math.sqrt(2) * k + k * k) * norm)
    ext = np.concatenate([2 * x[0] - x[pad:0:-1], x, 2 * x[-1] - x[-2:-pad - 2:-1]])
    y = _biquad(ext, b, a)
    y = _biquad(y[::-1], b, a)[::-1]
    return y[pad:pad + x.size]


def test_matches_time_domain_filtfilt() -> None:
    rng = np.random.default_rng(0)
    t = np.arange(int(0.25 * RATE)) / RATE
    x = (0.3 + 0.4 * np.sin(2 * np.pi * 30 * t) + 0.2 * np.sin(2 * np.pi * 440 * t)
         + 0.05 * rng.standard_normal(t.size))
    ours = highpass_zero_phase(x, 50.0, RATE)
    ref = _reference_filtfilt(x, 50.0, pad=RATE // 10)
    assert ours.dtype == np.float32 and ours.shape == x.shape
    assert np.max(np.abs(ours - ref)) < 1e-3 * np.max(np.abs(ref))


def test_response_dc_cutoff_and_passband() -> None:
    t = np.arange(RATE) / RATE

    def gain(f: float) -> float:
        y = highpass_zero_phase(np.sin(2 * np.pi * f * t) + 0.5, 50.0, RATE)
        mid = y[RATE // 4: 3 * RATE // 4]
        return float(np.sqrt(2 * np.mean(mid ** 2)))

    assert gain(5) < 1e-3  # 5 Hz and the DC offset are gone
    assert abs(gain(50) - 0.5) < 0.01  # -6 dB at the cut-off: -3 dB each way
    assert abs(gain(1000) - 1) < 1e-3


def test_short_input_keeps_length() -> None:
    for n in (1, 2, 7, 100):
        assert highpass_zero_phase(np.ones(n), 50.0, RATE).shape == (n,)


def test_fast_size_is_the_smallest_5_smooth_length() -> None:
    from services.enhance.highpass import fast_size

    def smooth(m: int) -> bool:
        for p in (2, 3, 5):
            while m % p == 0:
                m //= p
        return m == 1

    for n in (1, 2, 7, 97, 16001, 480_007, 1_000_003):
        f = fast_size(n)
        assert f >= n and smooth(f)
        assert not any(smooth(k) for k in range(n, f))


def test_prime_length_matches_filtfilt() -> None:
    # a segment's length is any number; the FFT length chosen for speed must not change the result
    x = np.random.default_rng(1).standard_normal(12_007)  # a prime number of samples
    ours = highpass_zero_phase(x, 50.0, RATE)
    ref = _reference_filtfilt(x, 50.0, pad=RATE // 10 if x.size > RATE // 10 else x.size - 1)
    assert np.max(np.abs(ours - ref)) < 1e-3 * np.max(np.abs(ref))
