"""Inaudible, robust 64-bit watermark for audio. Pure numpy/SciPy, deterministic (fixed key).

Design
------
* Payload: the 64-bit id plus CRC-24, convolutionally coded (282 coded bits, ``media_codecs.ecc``),
  preceded by ``PILOT_SYMBOLS`` known pilot bits.
* Carrier: the log energies of 64 ms x 125 Hz cells (``spectrum.py``) of the channel mix,
  resampled to 8 kHz. Each symbol owns ``PAIRS`` pairs of cells, both cells of a pair in the
  same band and the same 0.77 s group, so a gain, an equaliser or a low-pass cancels out of
  their difference. The symbol is written by *quantising* the sum of its pair differences
  (spread-transform dither modulation): the host's own fluctuations are not noise to fight but
  a value to move to the nearest point of the bit's lattice, which costs little energy.
  The change is a per-cell gain, so the mark has the host's spectral and temporal shape
  (masked by it, absent in silence) and the mark-to-signal ratio stays under -35 dB.
* Strength classes: the lattice step is one of ``_STEPS`` (four steps, 2 dB apart in mark
  energy); the embedder takes the largest step whose mark fits the 35.3 dB budget, so speech
  and music that leave headroom under a small step spend it (SNR ~35.3-37 dB on every clip).
  Only the smallest step is ever scaled down to fit. The reader tries every step; the pilot
  picks it. Cells that white noise at ``_NOISE_DESIGN_DB`` under the signal would drown count
  less in the embedder's choice of where to put the change.
* The layout repeats every ``PERIOD_SLOTS`` slots (8.4 s): any 8.5 s of the recording hold
  every symbol once. Reading tries every cyclic shift and 8-ms offset, keeps the one where the
  pilot bits agree best, and adds up the soft values of every copy in the window.
* Speed: a speed change (resampling, pitch moves too) is undone by resampling the 8 kHz
  analysis signal: 1.0 first, then a grid of +-2.5% in 0.25% steps scored by the pilot alone.
* Noise: a window is read as is, then with each band's noise floor (from its quietest cells)
  subtracted and cells weighted by their estimated signal share, since added noise fills
  the pauses of speech.
* Bounded reading: at most ``_MAX_WINDOWS`` windows of 25.6 s, the centre one first.
* A read is accepted only if the pilot is significant, the CRC matches and the soft values
  agree with the re-encoded codeword: otherwise ``None``, never a wrong id.

Minimum length: ``embed`` needs ``MIN_EMBED_SECONDS`` (9 s); ``extract`` returns None on less
than one period of audio.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from media_codecs import ecc
from media_codecs.audio import spectrum as sp
from media_codecs.ecc import MARK_BITS

MIN_EMBED_SECONDS = 9.0
MAX_CHANNELS = 8
MIN_RATE, MAX_RATE = 8000, 192000

_SEED = 0xA0D1_0C0D_2026
PILOT_SYMBOLS = 48
PAIRS = 5  # cell pairs per symbol
_GROUP_SLOTS = 12  # a symbol's cells lie within 12 slots (0.77 s)
# Quantiser steps of a symbol's projection (natural-log energy units), strongest first: the
# embedder takes the largest whose mark fits the SNR budget, the reader tries each.
_STEPS = (2.0, 1.6, 1.27, 1.0)
_MAX_CELL_CHANGE = 1.0  # at most +-4.3 dB on one cell
_COST_SLOT_SHARE = 0.1  # 0: cheapest mark (in quiet cells); large: uniform log change
_NOISE_DESIGN_DB = 30.0
_CELL_NOISE_GAIN = sp.SLOT_FRAMES * sp.BAND_BINS * sp.FRAME / 2  # cell energy per unit noise variance
_EMBED_PASSES = 6  # re-measure and correct: overlap-add smears each pass's cell gains
_TARGET_SNR_DB = 35.3  # the mark is scaled down if it would exceed signal / 10^(35.3/10)

_QUIET_SLOT = 0.1  # a slot 10 dB under the median slot counts half at reading
# white noise: a band's 10th-percentile cell holds 0.62 of its mean energy
_NOISE_PERCENTILE, _NOISE_PERCENTILE_RATIO = 10, 0.62
_READ_SLOTS = 400  # a read looks at 25.6 s at a time, so a speed error builds up little drift
_MAX_WINDOWS = 3
_SPEEDS = tuple(1.0 + 0.0025 * k for k in range(-10, 11) if k != 0)
_SPEED_TRIALS = 3  # speeds whose pilot peak is decoded
_MIN_PILOT_Z = 5.0  # pilot score in standard deviations; unmarked audio stays under ~4.5
# Normalised correlation of the soft values with the decoded codeword: Viterbi on random soft
# values reaches 0.55 (median) to 0.60 (max of 3000 trials); real reads sit at 0.75-0.99.
_MIN_CODEWORD_AGREEMENT = 0.65


class WatermarkError(Exception):
    """The audio cannot carry the mark (bad shape, rate or id)."""


class AudioTooShort(WatermarkError):
    """The audio is shorter than ``MIN_EMBED_SECONDS``."""


# ---------------------------------------------------------------- layout


@dataclass(frozen=True)
class _Layout:
    """Cells of every symbol within one period: pair ``j`` of symbol ``i`` is
    ``+(slot_a[i, j], band[i, j]) - (slot_b[i, j], band[i, j])``."""

    slot_a: np.ndarray
    slot_b: np.ndarray
    band: np.ndarray
    dither: np.ndarray  # per symbol, in lattice steps
    pilot: np.ndarray  # the known pilot bits


N_SYMBOLS = PILOT_SYMBOLS + ecc.CODED_BITS
_PAIRS_PER_GROUP = _GROUP_SLOTS // 2 * sp.N_BANDS
_SYMBOLS_PER_GROUP = _PAIRS_PER_GROUP // PAIRS
PERIOD_SLOTS = -(-N_SYMBOLS // _SYMBOLS_PER_GROUP) * _GROUP_SLOTS
PERIOD_SECONDS = PERIOD_SLOTS * sp.SLOT / sp.RATE


@lru_cache(maxsize=1)
def _layout() -> _Layout:
    """Keyed assignment: symbols shuffled over the groups, pairs shuffled within a group."""
    rng = np.random.default_rng(_SEED)
    n_groups = PERIOD_SLOTS // _GROUP_SLOTS
    order = rng.permutation(n_groups * _SYMBOLS_PER_GROUP)  # extra symbol places stay unused
    slot_a = np.zeros((N_SYMBOLS, PAIRS), dtype=np.int64)
    slot_b, band = np.zeros_like(slot_a), np.zeros_like(slot_a)
    for group in range(n_groups):
        pairs = []
        for b in range(sp.N_BANDS):
            slots = group * _GROUP_SLOTS + rng.permutation(_GROUP_SLOTS)
            pairs.extend((slots[2 * i], slots[2 * i + 1], b) for i in range(_GROUP_SLOTS // 2))
        pairs = np.array(pairs)[rng.permutation(len(pairs))].reshape(_SYMBOLS_PER_GROUP, PAIRS, 3)
        for place, symbol in enumerate(order[group * _SYMBOLS_PER_GROUP : (group + 1) * _SYMBOLS_PER_GROUP]):
            if symbol < N_SYMBOLS:
                slot_a[symbol], slot_b[symbol], band[symbol] = pairs[place].T
    return _Layout(slot_a, slot_b, band, rng.random(N_SYMBOLS), rng.integers(0, 2, PILOT_SYMBOLS))


def _projections(feat: np.ndarray, start: np.ndarray | int,
                 symbols: slice = slice(None)) -> tuple[np.ndarray, np.ndarray]:
    """Each symbol's projection for the period copies starting at slots ``start`` (any shape,
    may be negative), and a mask of the symbols wholly inside ``feat``: shape start + (symbols,)."""
    lay = _layout()
    start = np.asarray(start)[..., None, None]
    ta, tb, band = lay.slot_a[symbols] + start, lay.slot_b[symbols] + start, lay.band[symbols]
    inside = (np.minimum(ta, tb).min(axis=-1) >= 0) & (np.maximum(ta, tb).max(axis=-1) < len(feat))
    ta, tb = np.clip(ta, 0, len(feat) - 1), np.clip(tb, 0, len(feat) - 1)
    projection = (feat[ta, band] - feat[tb, band]).sum(axis=-1) / np.sqrt(2 * PAIRS)
    return projection, inside


# ---------------------------------------------------------------- embedding


def embed(samples: np.ndarray, sample_rate: int, mark_id: int) -> np.ndarray:
    """Return ``samples`` (float in [-1, 1], shape (n,) or (n, channels)) carrying ``mark_id``.

    The same mark goes into every channel; the result keeps the shape and stays in [-1, 1].
    Raises AudioTooShort under ``MIN_EMBED_SECONDS``, WatermarkError for a bad shape, rate or id.
    """
    x = _validated(samples, sample_rate)
    frames = x if x.ndim == 2 else x[:, None]
    mark = plan(_array_blocks(frames), sample_rate, mark_id)
    marked = np.concatenate(list(mark.add_to(np.array(block) for block in _array_blocks(frames))))
    return marked if x.ndim == 2 else marked[:, 0]


@dataclass(frozen=True)
class Mark:
    """One recording's mark at the analysis rate, scaled to the SNR budget, ready to add at full rate."""

    signal: np.ndarray  # at sp.RATE (float32: 4 bytes a sample, whatever the recording's rate)
    sample_rate: int
    frames: int

    def add_to(self, blocks: Iterable[np.ndarray]) -> Iterator[np.ndarray]:
        """Each (frames, channels) float block of the recording, in order, with the mark added to every
        channel and clipped to [-1, 1] in place."""
        tape = _Tape(sp.resample_blocks(_array_blocks(self.signal), sp.RATE, self.sample_rate))
        for block in blocks:
            block += tape.take(len(block))[:, None]
            yield np.clip(block, -1.0, 1.0, out=block)


def plan(blocks: Iterable[np.ndarray], sample_rate: int, mark_id: int) -> Mark:
    """The mark for the recording read as (frames, channels) float ``blocks`` in [-1, 1], in order.

    Only the 8 kHz channel mix is kept, never the full-rate samples: one pass over the blocks.
    Raises AudioTooShort under ``MIN_EMBED_SECONDS``, WatermarkError for a bad shape, rate or id.
    """
    if not MIN_RATE <= sample_rate <= MAX_RATE:
        raise WatermarkError(f"sample rate {sample_rate} outside {MIN_RATE}..{MAX_RATE} Hz")
    if not 0 <= mark_id < 1 << MARK_BITS:
        raise WatermarkError("mark_id must be an unsigned 64-bit integer")
    summary = _Summary()
    analysis = np.concatenate([np.zeros(0, dtype=np.float32), *(
        piece.astype(np.float32) for piece in sp.resample_blocks(map(summary.add, blocks), sample_rate, sp.RATE))])
    if summary.frames < MIN_EMBED_SECONDS * sample_rate:
        raise AudioTooShort(f"need at least {MIN_EMBED_SECONDS} s of audio, got {summary.frames / sample_rate:.2f} s")
    bits = np.concatenate([_layout().pilot, ecc.conv_encode(ecc.payload_bits(mark_id))])
    power = summary.energy / (summary.frames * summary.channels)
    for step in _STEPS:
        signal = None  # the previous step's mark is not kept beside the next one
        signal = _mark_signal(analysis, bits, step, power)
        limit = _snr_limit(summary, _full_rate_energy(signal, sample_rate, summary.frames))
        if limit >= 1.0:
            break
    signal *= np.float32(limit)
    return Mark(signal, sample_rate, summary.frames)


class _Summary:
    """What the embedder needs from the full-rate samples as they stream past: their energy, their
    length, and the channel mix (returned for each block, checked)."""

    def __init__(self) -> None:
        self.frames, self.channels, self.energy = 0, 0, 0.0

    def add(self, block: np.ndarray) -> np.ndarray:
        if block.ndim != 2 or not 1 <= block.shape[1] <= MAX_CHANNELS or block.shape[1] != (
                self.channels or block.shape[1]):
            raise WatermarkError(f"samples must be (n, 1..{MAX_CHANNELS}) blocks of one layout, got {block.shape}")
        if not np.all(np.isfinite(block)):
            raise WatermarkError("samples must be finite")
        self.frames, self.channels = self.frames + len(block), block.shape[1]
        self.energy += float(np.sum(np.square(block, dtype=np.float64)))
        return sp.mono_mix(block)


class _Tape:
    """Pieces of a stream handed out in the sizes asked for; zeros once it runs out."""

    def __init__(self, pieces: Iterator[np.ndarray]) -> None:
        self._pieces, self._left = pieces, np.zeros(0)

    def take(self, count: int) -> np.ndarray:
        parts, have = [self._left], len(self._left)
        while have < count:
            piece = next(self._pieces, None)
            if piece is None:
                parts.append(np.zeros(count - have))
                break
            parts.append(piece)
            have += len(piece)
        joined = np.concatenate(parts)
        self._left = joined[count:]
        return joined[:count]


def _array_blocks(x: np.ndarray, size: int = 1 << 16) -> Iterator[np.ndarray]:
    return (x[start : start + size] for start in range(0, len(x), size))


def _full_rate_energy(signal: np.ndarray, sample_rate: int, frames: int) -> float:
    """Energy of the mark at the recording's rate over its ``frames`` (one channel), computed in blocks."""
    tape = _Tape(sp.resample_blocks(_array_blocks(signal), sp.RATE, sample_rate))
    return sum(float(np.sum(np.square(tape.take(min(1 << 16, frames - at)))))
               for at in range(0, frames, 1 << 16))


def _validated(samples: np.ndarray, sample_rate: int) -> np.ndarray:
    x = np.asarray(samples, dtype=np.float64)
    if x.ndim not in (1, 2) or (x.ndim == 2 and not 1 <= x.shape[1] <= MAX_CHANNELS):
        raise WatermarkError(f"samples must be (n,) or (n, 1..{MAX_CHANNELS}), got {x.shape}")
    if not MIN_RATE <= sample_rate <= MAX_RATE:
        raise WatermarkError(f"sample rate {sample_rate} outside {MIN_RATE}..{MAX_RATE} Hz")
    if not np.all(np.isfinite(x)):
        raise WatermarkError("samples must be finite")
    return x


def _mark_signal(x: np.ndarray, bits: np.ndarray, step: float, power: float) -> np.ndarray:
    """The 8 kHz mark (float32): cell gains found by quantising every symbol copy, refined over passes.

    Spectra are computed a block at a time (``sp.band_power_blocks``, ``sp.cell_mark``): only the
    signal, the mark and per-cell arrays are held."""
    energy = sp.cell_energy(sp.band_power_blocks(x))
    # what a change of one cell costs: its own energy, plus a share of its slot's (masking)
    cost = energy + _COST_SLOT_SHARE * energy.mean(axis=1, keepdims=True) + 1e-12
    # a cell's energy from white noise at _NOISE_DESIGN_DB under the whole signal: cells far
    # under it are lost to such noise, so the change goes preferably into cells above it
    noise_cell = _CELL_NOISE_GAIN * power * 10 ** (-_NOISE_DESIGN_DB / 10)
    log_gain = np.zeros_like(energy)
    marked_energy, mark, targets = energy, None, {}
    for _ in range(_EMBED_PASSES):
        feat, weight = sp.features(marked_energy)
        weight = weight * marked_energy / (marked_energy + noise_cell)
        log_gain += _gain_steps(feat, weight / cost, weight, bits, targets, step)
        np.clip(log_gain, -_MAX_CELL_CHANGE, _MAX_CELL_CHANGE, out=log_gain)
        mark = None  # the previous pass's mark is not kept beside the next one
        mark = sp.cell_mark(x, log_gain, np.float32)
        marked_energy = sp.cell_energy(sp.band_power_blocks(x, mark))
    return mark


def _gain_steps(feat: np.ndarray, push: np.ndarray, weight: np.ndarray, bits: np.ndarray,
                targets: dict[int, np.ndarray], step: float) -> np.ndarray:
    """Log-energy change per cell that moves each symbol's projection onto its bit's lattice.

    The lattice point is chosen on the first pass (``targets`` is filled then) and kept, so
    later passes only correct what overlap-add smeared instead of hopping between points.
    Cell k of a symbol changes by ``c * u_k * push_k``: with ``push = weight / cost`` this is the
    cheapest change (in mark energy) that moves the projection by the needed amount."""
    lay = _layout()
    steps = np.zeros_like(feat)
    offset = (lay.dither + 0.5 * bits) * step
    for start in range(0, len(feat), PERIOD_SLOTS):
        projection, inside = _projections(feat, start)
        if start not in targets:
            targets[start] = np.round((projection - offset) / step) * step + offset
        target = targets[start]
        ta, tb, band = (lay.slot_a + start)[inside], (lay.slot_b + start)[inside], lay.band[inside]
        pa, pb = push[ta, band], push[tb, band]
        moved = (pa * weight[ta, band] + pb * weight[tb, band]).sum(axis=1) + 1e-30
        scale = (target - projection)[inside] * np.sqrt(2 * PAIRS) / moved
        # a symbol with no cell that can move (silence, a bare tone) is left alone, not forced
        largest = np.maximum(pa.max(axis=1), pb.max(axis=1)) * np.abs(scale) + 1e-30
        scale *= np.minimum(1.0, _MAX_CELL_CHANGE / largest)
        steps[ta, band] += scale[:, None] * pa
        steps[tb, band] -= scale[:, None] * pb
    return steps


def _snr_limit(summary: _Summary, mark_energy: float) -> float:
    """Factor keeping signal / mark at ``_TARGET_SNR_DB`` or more (the same mark is in every channel)."""
    noise = summary.channels * mark_energy + 1e-20
    return min(1.0, float(np.sqrt(summary.energy / noise / 10 ** (_TARGET_SNR_DB / 10))))


# ---------------------------------------------------------------- reading


def extract(samples: np.ndarray, sample_rate: int) -> int | None:
    """Return the 64-bit id carried by ``samples`` (as for ``embed``), or None.

    None means no valid mark was found (unmarked, too damaged, too short or unreadable input);
    a mark that fails the pilot, CRC-24 and codeword checks is never reported.
    """
    try:
        x = _validated(samples, sample_rate)
    except WatermarkError:
        return None
    analysis = sp.resample(sp.mono_mix(x), sample_rate, sp.RATE)
    if len(analysis) < (PERIOD_SLOTS + 1) * sp.SLOT:
        return None
    for window in _read_windows(analysis):
        mark_id = _read_window(window)
        if mark_id is not None:
            return mark_id
    return None


def _read_windows(x: np.ndarray) -> list[np.ndarray]:
    """At most ``_MAX_WINDOWS`` windows of ``_READ_SLOTS`` slots spread over ``x``, the centre
    one first: reading time stays bounded however long the recording."""
    size = _READ_SLOTS * sp.SLOT
    if len(x) <= size * 1.25:
        return [x]
    count = min(_MAX_WINDOWS, int(np.ceil(len(x) / size)))
    starts = np.linspace(0, len(x) - size, count).astype(int)
    centre = (len(x) - size) / 2
    return [x[s : s + size] for s in sorted(starts, key=lambda s: abs(s - centre))]


def _read_window(x: np.ndarray) -> int | None:
    """Read at the original speed (as is, then with the noise floor taken out), then at the
    speeds whose pilot peaks best."""
    power = _power(x)
    for denoise in (False, True):
        mark_id, _ = _read_cells(_cells(power, denoise))
        if mark_id is not None:
            return mark_id
    scored = []
    for speed in _SPEEDS:
        cells = _cells(_power(sp.resample(x, 1.0, speed)))
        scored.append((_pilot_search(cells)[0], speed, cells))
    scored.sort(key=lambda item: -item[0])
    for z, _, cells in scored[:_SPEED_TRIALS]:
        if z < _MIN_PILOT_Z:
            break
        mark_id, _ = _read_cells(cells)
        if mark_id is not None:
            return mark_id
    return None


def _power(x: np.ndarray) -> np.ndarray:
    return sp.band_power(sp.stft(x, sp.HOP // sp.READ_STEP))


def _cells(power: np.ndarray, denoise: bool = False) -> list[tuple[np.ndarray, np.ndarray]]:
    """(features, weights) of the slot grid at each 8-ms offset. With ``denoise``, each band's
    noise floor (estimated from its quietest cells) is subtracted and cells are weighted by
    their estimated share of signal: added broadband noise fills the pauses of speech."""
    cells = []
    for offset in range(sp.READ_STEP * sp.SLOT_FRAMES):
        energy = sp.cell_energy(power, sp.READ_STEP, offset)
        share = 1.0
        if denoise and len(energy):
            noise = np.percentile(energy, _NOISE_PERCENTILE, axis=0) / _NOISE_PERCENTILE_RATIO
            clean = np.maximum(energy - noise, 0.0)
            share = clean / (clean + noise + 1e-30)
            energy = clean
        feat, weight = sp.features(energy)
        # slots far quieter than the window's typical slot (pauses, fades) hold mostly noise
        level = energy.mean(axis=1, keepdims=True)
        typical = np.median(level) if len(level) else 0.0
        cells.append((feat, share * weight * level / (level + _QUIET_SLOT * typical + 1e-12)))
    return cells


def _soft_values(feat: np.ndarray, weight: np.ndarray, start: np.ndarray, symbols: slice,
                 steps: tuple[float, ...]) -> np.ndarray:
    """Soft value (positive means bit 1) of each symbol for the copies at ``start``, for each
    quantiser step (leading axis), weighted by how much of the symbol's cells stand above the
    floor; 0 for copies cut by the window edge."""
    lay = _layout()
    projection, inside = _projections(feat, start, symbols)
    start = np.asarray(start)[..., None, None]
    ta = np.clip(lay.slot_a[symbols] + start, 0, len(feat) - 1)
    tb = np.clip(lay.slot_b[symbols] + start, 0, len(feat) - 1)
    band = lay.band[symbols]
    reliability = 0.5 * (weight[ta, band] + weight[tb, band]).mean(axis=-1) * inside
    dither = lay.dither[symbols]
    return np.stack([-np.cos(2 * np.pi * (projection / step - dither)) * reliability for step in steps])


def _symbol_soft(cells: tuple[np.ndarray, np.ndarray], shifts: np.ndarray, symbols: slice,
                 steps: tuple[float, ...] = _STEPS) -> tuple[np.ndarray, np.ndarray]:
    """Soft values summed over every copy for each step and period start in ``shifts``
    (steps, shifts, symbols), and the sum of their squares (steps, shifts): the noise power
    of their sum."""
    feat, weight = cells
    copies = np.arange(-1, len(feat) // PERIOD_SLOTS + 1) * PERIOD_SLOTS
    soft = _soft_values(feat, weight, shifts[:, None] + copies[None, :], symbols, steps)
    return soft.sum(axis=2), (soft * soft).sum(axis=(2, 3))


def _pilot_search(cells: list[tuple[np.ndarray, np.ndarray]]) -> tuple[float, int, int, float]:
    """Best (pilot z-score, offset, shift, step) over every 8-ms offset, cyclic shift and step."""
    signs = 2.0 * _layout().pilot - 1.0
    shifts = np.arange(PERIOD_SLOTS)
    best = (-np.inf, 0, 0, _STEPS[0])
    for offset, cell in enumerate(cells):
        soft, power = _symbol_soft(cell, shifts, slice(0, PILOT_SYMBOLS))
        # under no mark, the signed sum has about the variance of the sum of squares
        z = (soft @ signs) / np.sqrt(power + 1e-12)
        k, shift = np.unravel_index(int(np.argmax(z)), z.shape)
        best = max(best, (float(z[k, shift]), offset, int(shift), _STEPS[k]))
    return best


def _read_cells(cells: list[tuple[np.ndarray, np.ndarray]]) -> tuple[int | None, float]:
    z, offset, shift, step = _pilot_search(cells)
    if z < _MIN_PILOT_Z:
        return None, z
    soft, _ = _symbol_soft(cells[offset], np.array([shift]), slice(PILOT_SYMBOLS, None), (step,))
    return ecc.decode(soft[0, 0], _MIN_CODEWORD_AGREEMENT)[0], z
