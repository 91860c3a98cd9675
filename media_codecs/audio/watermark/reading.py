"""How the audio mark is read: sync search by the pilot, soft values summed over copies, Viterbi.

Reading tries every cyclic shift of the period and 8-ms offset, keeps the one where the pilot
bits agree best, and adds up the soft values of every copy in the window. A speed change
(resampling, pitch moves too) is undone by resampling the 8 kHz analysis signal: 1.0 first,
then a grid of +-2.5% in 0.25% steps scored by the pilot alone on 16-ms offsets, the best three
scored again on 8-ms offsets and decoded. The pilot search is array work over every offset, shift
and step at once, in float32 (it only ranks syncs): a 12-s read that finds nothing, the dearest,
costs about 0.15 s of CPU (docs/performance.md). A window is read as is, then
with each band's noise floor (from its quietest cells) subtracted and cells weighted by their
estimated signal share, since added noise fills the pauses of speech. A read is accepted only
if the pilot is significant, the CRC matches and the soft values agree with the re-encoded
codeword: otherwise ``None``, never a wrong id.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from media_codecs import ecc
from media_codecs.audio import spectrum as sp
from media_codecs.audio.watermark.layout import PAIRS, PERIOD_SLOTS, PILOT_SYMBOLS, STEPS, layout, projections

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


def read(analysis: np.ndarray, search_speed: bool) -> int | None:
    """The id carried by the 8 kHz channel mix ``analysis``, or None (see the module docstring): at
    the recording's speed, or (``search_speed``) over the speed grid."""
    if len(analysis) < (PERIOD_SLOTS + 1) * sp.SLOT:
        return None
    for window in _read_windows(analysis):
        mark_id = _read_speeds(window) if search_speed else _read_window(window)
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
    """Read at the original speed: as is, then with the noise floor taken out."""
    power = _power(x)
    for denoise in (False, True):
        mark_id, _ = _read_cells(_cells(power, denoise))
        if mark_id is not None:
            return mark_id
    return None


def _read_speeds(x: np.ndarray) -> int | None:
    """Read at the speeds whose pilot peaks best: every speed scored on the 16-ms offsets (the even half of
    the 8-ms ones, so half the work), the ``_SPEED_TRIALS`` best scored again on every 8-ms offset and read."""
    coarse = []
    for speed in _SPEEDS:
        z = _pilot_search(_cells(_power(sp.resample(x, 1.0, speed), sp.HOP), step=1))[0]
        coarse.append((z, speed))
    scored = []
    for _, speed in sorted(coarse, key=lambda item: -item[0])[:_SPEED_TRIALS]:
        cells = _cells(_power(sp.resample(x, 1.0, speed)))
        scored.append((_pilot_search(cells)[0], speed, cells))
    scored.sort(key=lambda item: -item[0])
    for z, _, cells in scored:
        if z < _MIN_PILOT_Z:
            break
        mark_id, _ = _read_cells(cells)
        if mark_id is not None:
            return mark_id
    return None


def _power(x: np.ndarray, hop: int = sp.HOP // sp.READ_STEP) -> np.ndarray:
    """`sp.band_power(sp.stft(x, hop))` in float32: a third of the time, the same reads."""
    from scipy import fft  # numpy's FFT has no float32 path; see `sp.resample` for why scipy is imported here

    if len(x) < sp.FRAME:
        return np.zeros((0, sp.N_BANDS), dtype=np.float32)
    frames = np.lib.stride_tricks.sliding_window_view(x.astype(np.float32), sp.FRAME)[::hop]
    bins = fft.rfft(frames * _WINDOW32, axis=1)[:, sp.FIRST_BIN : sp.FIRST_BIN + sp.N_BANDS * sp.BAND_BINS]
    power = bins.real**2 + bins.imag**2
    return power.reshape(len(power), sp.N_BANDS, sp.BAND_BINS).sum(axis=2)


_WINDOW32 = sp.analysis_window().astype(np.float32)


def _cells(power: np.ndarray, denoise: bool = False, step: int = sp.READ_STEP) -> list[tuple[np.ndarray, np.ndarray]]:
    """(features, weights) of the slot grid at each offset, ``step`` offsets a frame of ``sp.HOP``: 8-ms
    offsets from `_power`'s default hop (``step`` 2), 16-ms ones from hop ``sp.HOP`` (``step`` 1). With
    ``denoise``, each band's
    noise floor (estimated from its quietest cells) is subtracted and cells are weighted by
    their estimated share of signal: added broadband noise fills the pauses of speech."""
    cells = []
    for offset in range(step * sp.SLOT_FRAMES):
        energy = sp.cell_energy(power, step, offset)
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
    lay = layout()
    projection, inside = projections(feat, start, symbols)
    start = np.asarray(start)[..., None, None]
    ta = np.clip(lay.slot_a[symbols] + start, 0, len(feat) - 1)
    tb = np.clip(lay.slot_b[symbols] + start, 0, len(feat) - 1)
    band = lay.band[symbols]
    reliability = 0.5 * (weight[ta, band] + weight[tb, band]).mean(axis=-1) * inside
    dither = lay.dither[symbols]
    return np.stack([-np.cos(2 * np.pi * (projection / step - dither)) * reliability for step in steps])


def _symbol_soft(cells: tuple[np.ndarray, np.ndarray], shifts: np.ndarray, symbols: slice,
                 steps: tuple[float, ...] = STEPS) -> tuple[np.ndarray, np.ndarray]:
    """Soft values summed over every copy for each step and period start in ``shifts``
    (steps, shifts, symbols), and the sum of their squares (steps, shifts): the noise power
    of their sum."""
    feat, weight = cells
    copies = np.arange(-1, len(feat) // PERIOD_SLOTS + 1) * PERIOD_SLOTS
    soft = _soft_values(feat, weight, shifts[:, None] + copies[None, :], symbols, steps)
    return soft.sum(axis=2), (soft * soft).sum(axis=(2, 3))


def _pilot_search(cells: list[tuple[np.ndarray, np.ndarray]]) -> tuple[float, int, int, float]:
    """Best (pilot z-score, offset, shift, step) over every 8-ms offset, cyclic shift and step.

    `_symbol_soft` over every shift, with the work cut to what counts: a pilot symbol's soft value is
    computed once for each place in the window where all its cells lie (a copy cut by the window's edge
    counts zero there), for every offset in one pass, and folded onto the shift it belongs to."""
    grid = _pilot_grid()
    slots = max(len(feat) for feat, _ in cells)  # the offsets' cells differ in length by a slot at most
    # stacked cells, zero-padded past the shortest offset's end and the last symbol's span: the feature and
    # the weight of a cell as one complex number, so one gather fetches both (weight negated for the
    # pairs' second cells: a - b then holds the feature difference and the weight sum)
    table = np.zeros((len(cells), slots + grid.span + 1, sp.N_BANDS), dtype=np.complex64)
    for row, (feat, weight) in enumerate(cells):
        table[row, : len(feat)].real, table[row, : len(feat)].imag = feat, weight
    table = table.reshape(len(cells), -1)
    # place u of symbol i: its earliest cell in slot u (its copy starts at slot u - first[i])
    at = np.arange(slots)[None, :, None] * sp.N_BANDS
    pairs = (np.take(table, grid.cell_a + at, axis=1) - np.take(table.conj(), grid.cell_b + at, axis=1)).sum(axis=1)
    projection = pairs.real * np.float32(1 / np.sqrt(2 * PAIRS))  # (offsets, places, symbols)
    lengths = np.array([len(feat) for feat, _ in cells])[:, None, None]
    inside = np.arange(slots)[None, :, None] + grid.last < lengths
    reliability = pairs.imag * np.float32(0.5 / PAIRS) * inside
    turns = projection / np.array(STEPS, dtype=np.float32)[:, None, None, None] - grid.dither
    soft = np.cos(turns * np.float32(2 * np.pi), out=turns)
    soft *= -reliability
    # fold the places onto one period, then turn each symbol's place into its copy's shift
    copies = -(-slots // PERIOD_SLOTS)
    padded = np.zeros((len(STEPS), len(cells), copies * PERIOD_SLOTS, PILOT_SYMBOLS), dtype=np.float32)
    padded[:, :, :slots] = soft
    folded = padded.reshape(len(STEPS), len(cells), copies, PERIOD_SLOTS, PILOT_SYMBOLS)
    by_shift = folded.sum(axis=2)[:, :, grid.place_of_shift, grid.symbols]  # (steps, offsets, shifts, symbols)
    power = (folded * folded).sum(axis=2)[:, :, grid.place_of_shift, grid.symbols].sum(axis=-1)
    # under no mark, the signed sum has about the variance of the sum of squares
    z = (by_shift @ grid.signs) / np.sqrt(power + np.float32(1e-12))  # (steps, offsets, shifts)
    k, offset, shift = np.unravel_index(int(np.argmax(z)), z.shape)
    return float(z[k, offset, shift]), int(offset), int(shift), STEPS[k]


@dataclass(frozen=True)
class _PilotGrid:
    """The pilot symbols' cells relative to each symbol's earliest slot."""

    cell_a: np.ndarray  # (pairs, 1, symbols): flat index (slot x bands + band) of each pair's first cell
    cell_b: np.ndarray
    last: np.ndarray  # (symbols,): the symbol's latest slot
    span: int  # the largest of `last`
    place_of_shift: np.ndarray  # (shifts, symbols): the place, modulo the period, of each shift's copy
    symbols: np.ndarray  # (1, symbols)
    dither: np.ndarray  # float32 (symbols,)
    signs: np.ndarray  # float32 (symbols,): +1 for a pilot bit 1, -1 for 0


@lru_cache(maxsize=1)
def _pilot_grid() -> _PilotGrid:
    lay = layout()
    slot_a, slot_b = lay.slot_a[:PILOT_SYMBOLS].T, lay.slot_b[:PILOT_SYMBOLS].T  # (pairs, symbols)
    first = np.minimum(slot_a, slot_b).min(axis=0)
    last = np.maximum(slot_a, slot_b).max(axis=0) - first
    band = lay.band[:PILOT_SYMBOLS].T
    cell_a = ((slot_a - first) * sp.N_BANDS + band)[:, None, :]
    cell_b = ((slot_b - first) * sp.N_BANDS + band)[:, None, :]
    place_of_shift = (np.arange(PERIOD_SLOTS)[:, None] + first[None, :]) % PERIOD_SLOTS
    return _PilotGrid(cell_a, cell_b, last, int(last.max()), place_of_shift, np.arange(PILOT_SYMBOLS)[None, :],
                      lay.dither[:PILOT_SYMBOLS].astype(np.float32), (2.0 * lay.pilot - 1.0).astype(np.float32))


def _read_cells(cells: list[tuple[np.ndarray, np.ndarray]]) -> tuple[int | None, float]:
    z, offset, shift, step = _pilot_search(cells)
    if z < _MIN_PILOT_Z:
        return None, z
    soft, _ = _symbol_soft(cells[offset], np.array([shift]), slice(PILOT_SYMBOLS, None), (step,))
    return ecc.decode(soft[0, 0], _MIN_CODEWORD_AGREEMENT)[0], z
