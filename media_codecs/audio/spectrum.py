"""The time-frequency grid the audio watermark lives on, at a fixed 8 kHz analysis rate.

A *cell* is one slot of ``SLOT`` samples (4 STFT frames of 256, hop 128: 64 ms) by one band
of 4 bins (125 Hz); ``N_BANDS`` bands cover 312-3437 Hz, which survives telephone-grade
low-pass filters and every perceptual codec. The watermark only ever scales whole cells, and
reads each cell's log energy.

Long audio is marked in bounded memory: `resample_blocks` resamples a stream block by block,
and `band_power_blocks` / `cell_mark` run the STFT over ``BLOCK_FRAMES`` frames at a time, so
no full-length spectrogram (16 bytes a bin) is ever held.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from fractions import Fraction
from functools import lru_cache

import numpy as np

RATE = 8000
FRAME = 256
HOP = 128
SLOT_FRAMES = 4
SLOT = SLOT_FRAMES * HOP
FIRST_BIN, BAND_BINS, N_BANDS = 10, 4, 25
READ_STEP = 2  # reading uses hop HOP / READ_STEP, so slots can start at any 8-ms offset
BLOCK_FRAMES = 1024  # STFT frames per block when a whole recording is transformed (16 s, 2 MB of spectra)

_WINDOW = np.sqrt(np.hanning(FRAME + 1)[:FRAME])  # periodic sqrt-Hann: analysis * synthesis sums to 1
_FLOOR_REL = 0.01  # a cell 20 dB under its slot's mean band energy counts as empty
_FLOOR_ABS = 1e-5  # about -95 dBFS per cell: digital silence is never marked


def mono_mix(samples: np.ndarray) -> np.ndarray:
    """The channel average (the mark is embedded identically in every channel)."""
    if samples.ndim == 1:
        return samples
    # channel by channel: the same sums as samples.mean(axis=1), without numpy's slow reduction over a short axis
    total = samples[:, 0].astype(np.float64)
    for channel in range(1, samples.shape[1]):
        total += samples[:, channel]
    total /= samples.shape[1]
    return total


def resample(x: np.ndarray, rate_from: float, rate_to: float) -> np.ndarray:
    """Polyphase resampling by the ratio ``rate_to / rate_from`` (rationalised)."""
    ratio = _ratio(rate_from, rate_to)
    if ratio == 1:
        return np.asarray(x, dtype=np.float64)
    return _resampled(np.asarray(x, dtype=np.float64), ratio.numerator, ratio.denominator)


def resample_blocks(blocks: Iterable[np.ndarray], rate_from: float, rate_to: float) -> Iterator[np.ndarray]:
    """``resample`` of the concatenated 1-D ``blocks``, yielded piece by piece (same values to rounding).

    Each piece is computed from its input plus a margin longer than the filter on both sides;
    pieces start at multiples of the ratio's denominator, so their outputs fall on the same grid.
    """
    ratio = _ratio(rate_from, rate_to)
    up, down = ratio.numerator, ratio.denominator
    # scipy's filter spans 10 * max(up, down) taps at the upsampled rate on each side of a sample
    margin = -(-(10 * max(up, down) // up + 2) // down) * down
    buffer, start, done, total = np.zeros(0), 0, 0, 0  # buffer holds input [start, total); output given to `done`
    for block in blocks:
        buffer = np.concatenate([buffer, np.asarray(block, dtype=np.float64)])
        total += len(block)
        ready = (total - margin) // down * down
        if ready - done >= 4 * margin:
            yield _resampled(buffer, up, down)[(done - start) * up // down : (ready - start) * up // down]
            done, keep = ready, ready - margin
            buffer, start = buffer[keep - start :], keep
    if total > done:
        yield _resampled(buffer, up, down)[(done - start) * up // down :]


def _ratio(rate_from: float, rate_to: float) -> Fraction:
    return Fraction(rate_to / rate_from).limit_denominator(2000)


def _resampled(x: np.ndarray, up: int, down: int) -> np.ndarray:
    # imported here: importing media_codecs must stay cheap and scipy-free (tests/media_codecs/test_pure.py)
    from scipy.signal import resample_poly

    if up == down:
        return x
    # the filter resample_poly would design (its default), designed once for the common ratios: the reader's
    # speed grid resamples by the same 21 for every file. An odd rate's long filter is not kept (a file can
    # pick its rate: 32 of 960,000 taps would hold 250 MB); at most 32 x 20,001 taps (5 MB) are.
    window = _lowpass(up, down) if max(up, down) <= _KEPT_FILTER_RATIO else ("kaiser", 5.0)
    return resample_poly(x, up, down, window=window)


_KEPT_FILTER_RATIO = 1000


@lru_cache(maxsize=32)
def _lowpass(up: int, down: int) -> np.ndarray:
    from scipy.signal import firwin

    taps = firwin(2 * 10 * max(up, down) + 1, 1.0 / max(up, down), window=("kaiser", 5.0))
    taps.flags.writeable = False  # resample_poly copies it before scaling
    return taps


def analysis_window() -> np.ndarray:
    """The STFT's window (a copy)."""
    return _WINDOW.copy()


def stft(x: np.ndarray, hop: int = HOP) -> np.ndarray:
    """Complex spectra of the frames starting every ``hop`` samples (no padding)."""
    if len(x) < FRAME:
        return np.zeros((0, FRAME // 2 + 1), dtype=np.complex128)
    frames = np.lib.stride_tricks.sliding_window_view(x, FRAME)[::hop]
    return np.fft.rfft(frames * _WINDOW, axis=1)


def frame_count(length: int) -> int:
    """STFT frames (hop ``HOP``) in ``length`` samples."""
    return max(0, (length - FRAME) // HOP + 1)


def _frame_blocks(length: int) -> Iterator[tuple[int, slice]]:
    """(first frame, samples it needs) for each block of ``BLOCK_FRAMES`` frames."""
    frames = frame_count(length)
    for first in range(0, frames, BLOCK_FRAMES):
        last = min(frames, first + BLOCK_FRAMES)
        yield first, slice(first * HOP, (last - 1) * HOP + FRAME)


def band_power_blocks(x: np.ndarray, added: np.ndarray | None = None) -> np.ndarray:
    """``band_power(stft(x + added))`` (``added`` as long as ``x``), a block of frames at a time."""
    power = np.zeros((frame_count(len(x)), N_BANDS))
    for first, samples in _frame_blocks(len(x)):
        segment = x[samples].astype(np.float64)
        if added is not None:
            segment += added[samples]
        spectra = stft(segment)
        power[first : first + len(spectra)] = band_power(spectra)
    return power


def cell_mark(x: np.ndarray, log_gain: np.ndarray, dtype: type = np.float64) -> np.ndarray:
    """The overlap-added inverse of ``apply_cell_gains(stft(x), log_gain) - stft(x)``, ``len(x)`` samples long,
    a block of frames at a time."""
    out = np.zeros(max(len(x), (frame_count(len(x)) + 1) * HOP), dtype=dtype)
    for first, samples in _frame_blocks(len(x)):
        spectra = stft(x[samples].astype(np.float64))
        frames = np.fft.irfft(apply_cell_gains(spectra, log_gain, first) - spectra, n=FRAME, axis=1) * _WINDOW
        for parity in (0, 1):  # frames of one parity do not overlap: lay them end to end
            chunk = frames[parity::2].ravel()
            at = (first + parity) * HOP
            out[at : at + len(chunk)] += chunk
    return out[: len(x)]


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


def apply_cell_gains(spectra: np.ndarray, log_gain: np.ndarray, first_frame: int = 0) -> np.ndarray:
    """Spectra (frames from ``first_frame`` on) with each cell's bins scaled by ``exp(log_gain / 2)``
    (a log-energy change)."""
    out = spectra.copy()
    n_frames = max(0, min(len(spectra), len(log_gain) * SLOT_FRAMES - first_frame))
    slots = (first_frame + np.arange(n_frames)) // SLOT_FRAMES
    amplitude = np.exp(0.5 * log_gain[slots])
    band = slice(FIRST_BIN, FIRST_BIN + N_BANDS * BAND_BINS)
    out[:n_frames, band] *= np.repeat(amplitude, BAND_BINS, axis=1)
    return out
