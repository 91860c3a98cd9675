"""The time-frequency grid the audio watermark lives on, at a fixed 8 kHz analysis rate.

A *cell* is one slot of ``SLOT`` samples (4 STFT frames of 256, hop 128: 64 ms) by one band
of 4 bins (125 Hz); ``N_BANDS`` bands cover 312-3437 Hz, which survives telephone-grade
low-pass filters and every perceptual codec. The watermark only ever scales whole cells, and
reads each cell's log energy.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

RATE = 8000
FRAME = 256
HOP = 128
SLOT_FRAMES = 4
SLOT = SLOT_FRAMES * HOP
FIRST_BIN, BAND_BINS, N_BANDS = 10, 4, 25
READ_STEP = 2  # reading uses hop HOP / READ_STEP, so slots can start at any 8-ms offset

_WINDOW = np.sqrt(np.hanning(FRAME + 1)[:FRAME])  # periodic sqrt-Hann: analysis * synthesis sums to 1
_FLOOR_REL = 0.01  # a cell 20 dB under its slot's mean band energy counts as empty
_FLOOR_ABS = 1e-5  # about -95 dBFS per cell: digital silence is never marked


def mono_mix(samples: np.ndarray) -> np.ndarray:
    """The channel average (the mark is embedded identically in every channel)."""
    return samples if samples.ndim == 1 else samples.mean(axis=1)


def resample(x: np.ndarray, rate_from: float, rate_to: float) -> np.ndarray:
    """Polyphase resampling by the ratio ``rate_to / rate_from`` (rationalised)."""
    ratio = Fraction(rate_to / rate_from).limit_denominator(2000)
    if ratio == 1:
        return np.asarray(x, dtype=np.float64)
    # imported here: importing media_codecs must stay cheap and scipy-free (tests/media_codecs/test_pure.py)
    from scipy.signal import resample_poly

    return resample_poly(x, ratio.numerator, ratio.denominator)


def stft(x: np.ndarray, hop: int = HOP) -> np.ndarray:
    """Complex spectra of the frames starting every ``hop`` samples (no padding)."""
    if len(x) < FRAME:
        return np.zeros((0, FRAME // 2 + 1), dtype=np.complex128)
    frames = np.lib.stride_tricks.sliding_window_view(x, FRAME)[::hop]
    return np.fft.rfft(frames * _WINDOW, axis=1)


def istft(spectra: np.ndarray, length: int) -> np.ndarray:
    """Overlap-add inverse of ``stft`` at hop ``HOP`` (frames of half overlap)."""
    frames = np.fft.irfft(spectra, n=FRAME, axis=1) * _WINDOW
    out = np.zeros(max(length, (len(frames) + 1) * HOP))
    for parity in (0, 1):  # frames of one parity do not overlap: lay them end to end
        chunk = frames[parity::2].ravel()
        out[parity * HOP : parity * HOP + len(chunk)] += chunk
    return out[:length]


def band_power(spectra: np.ndarray) -> np.ndarray:
    """Energy of each frame in each watermark band: shape (frames, N_BANDS)."""
    bins = spectra[:, FIRST_BIN : FIRST_BIN + N_BANDS * BAND_BINS]
    power = bins.real**2 + bins.imag**2
    return power.reshape(len(spectra), N_BANDS, BAND_BINS).sum(axis=2)


def cell_energy(power: np.ndarray, step: int = 1, offset: int = 0) -> np.ndarray:
    """Sum band power over slots: slot t is frames ``offset + step * (4t + i)``, i < 4."""
    n_slots = max(0, (len(power) - offset - step * (SLOT_FRAMES - 1) - 1) // (step * SLOT_FRAMES) + 1)
    if n_slots == 0:
        return np.zeros((0, N_BANDS))
    frames = offset + step * (SLOT_FRAMES * np.arange(n_slots)[:, None] + np.arange(SLOT_FRAMES))
    return power[frames].sum(axis=1)


def features(energy: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Log energy of each cell over a floor, and how much the cell's energy moves it (0..1)."""
    floor = _FLOOR_REL * energy.mean(axis=1, keepdims=True) + _FLOOR_ABS
    return np.log(energy + floor), energy / (energy + floor)


def apply_cell_gains(spectra: np.ndarray, log_gain: np.ndarray) -> np.ndarray:
    """Spectra with each cell's bins scaled by ``exp(log_gain / 2)`` (a log-energy change)."""
    out = spectra.copy()
    n_frames = min(len(spectra), len(log_gain) * SLOT_FRAMES)
    amplitude = np.exp(0.5 * np.repeat(log_gain, SLOT_FRAMES, axis=0)[:n_frames])
    band = slice(FIRST_BIN, FIRST_BIN + N_BANDS * BAND_BINS)
    out[:n_frames, band] *= np.repeat(amplitude, BAND_BINS, axis=1)
    return out
