"""The mark's second carrier: the broadband energy envelope, which goes wherever the signal is.

The cell mark (``layout``, ``embedding``, ``reading``) lives in the 0.3-3.4 kHz band of the 8 kHz mix.
Material whose energy leaves that band (a sweep or a tone above 3.4 kHz over quiet noise) leaves it
only the quiet rest to hide in, and added noise covers that. This carrier reads the energy of the
whole channel mix, at the recording's own rate, so a strong partial carries it wherever it goes.

* Slots of ``SLOT_SECONDS`` (32 ms); each slot's *core* (its middle 24 ms) is measured, its edges
  (``RAMP_SECONDS`` either side) are where the gain moves from one slot's value to the next.
* Symbol of slot k: the difference of log core energies ``f[k] - f[k-1]`` (a gain cancels out),
  quantised onto its bit's dithered lattice of step ``step`` (dither modulation, as the cells). The
  embedder goes slot by slot, so each slot is quantised against the previous one as marked: the
  whole signal is scaled by at most ``exp(step / 4)`` in amplitude, a mark of ``step^2 / 48`` of
  its energy.
* How much of the SNR budget it takes (``share``): what the cells cannot use. The share of the mix's
  energy outside the cells' band, less ``_SHARE_FREE`` (speech and most music: nothing, the cells
  keep the whole budget), rounded down to one of ``SHARES`` (at most half the budget). The reader
  tries each step; the pilot picks.
* Every symbol once per period of ``N_SYMBOLS`` slots (10.6 s), in a keyed order: the same 48 pilot
  bits and 282 coded bits as the cells. Slots below ``_SILENT_POWER`` are left alone.
* Reading: the mix's cumulative energy gives every slot's core energy at any 2-ms offset; the pilot
  picks the offset and the period shift, soft values are summed over copies, Viterbi and the same
  acceptance as the cells (pilot significance, CRC-24, codeword agreement). No speed search: the
  cells read speed changes; this carrier is for what added noise leaves of band-poor material.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from media_codecs import ecc
from media_codecs.audio.watermark.layout import N_SYMBOLS, PILOT_SYMBOLS, layout

SLOT_SECONDS = 0.032
RAMP_SECONDS = 0.004  # the gain moves over 2 x 4 ms around each slot boundary
_GRID = round(SLOT_SECONDS / RAMP_SECONDS)  # grid points (every 4 ms) a slot
SHARES = (0.5, 0.25, 0.125)  # of the SNR budget, largest first
_SHARE_FREE = 0.25  # out-of-band energy share the cells live with alone


def steps(budget: float) -> tuple[float, ...]:
    """The lattice step of each share of ``budget`` (the mark's energy over the signal's): a uniform log
    change in +-step/2 makes a mark of step^2 / 48 of the signal's energy."""
    return tuple(float(np.sqrt(48 * share * budget)) for share in SHARES)


def share_for(outside: float) -> float:
    """The budget share for a recording with ``outside`` of its energy out of the cells' band."""
    return next((share for share in SHARES if share <= outside - _SHARE_FREE), 0.0)

PERIOD_SECONDS = N_SYMBOLS * SLOT_SECONDS
_SILENT_POWER = 1e-9  # mean square of a slot's core (-90 dBFS): never marked, never read
_SEED = 0xE4E1_0BE5_2026
_READ_OFFSET = 0.002  # offsets tried at reading, seconds
_READ_SECONDS = 30.0  # at most the middle 30 s are read
_QUIET = 0.1  # a slot 10 dB under the window's median counts half at reading
_MIN_PILOT_Z = 5.0
_MIN_CODEWORD_AGREEMENT = 0.65
_CANDIDATES = 3  # best (offset, shift) syncs decoded


@dataclass(frozen=True)
class _Order:
    symbol: np.ndarray  # symbol carried by each slot of the period
    dither: np.ndarray  # per symbol, in lattice steps


@lru_cache(maxsize=1)
def _order() -> _Order:
    rng = np.random.default_rng(_SEED)
    return _Order(rng.permutation(N_SYMBOLS), rng.random(N_SYMBOLS))


class EnergyGrid:
    """Cumulative energy of a stream of (frames, channels) blocks at every 4 ms, gathered as the blocks
    stream past: of the channel mix (what the reader sees) and of the channels (what the SNR counts)."""

    def __init__(self, sample_rate: int) -> None:
        self.rate, self.at, self.done = sample_rate, 0, 0
        self._mix_total, self._channel_total = 0.0, 0.0
        self._mix, self._channel = [np.zeros(1)], [np.zeros(1)]  # pieces: 16 bytes per 4 ms in all

    def add(self, block: np.ndarray, mix: np.ndarray) -> None:
        end = self.at + len(block)
        spacing = RAMP_SECONDS * self.rate
        positions = np.arange(self.done + 1, int(end / spacing) + 1) * spacing
        if len(positions):
            xs = self.at + np.arange(len(block) + 1)
            mix_sum = self._mix_total + np.concatenate([[0.0], np.cumsum(np.square(mix, dtype=np.float64))])
            channel_sum = self._channel_total + np.concatenate(
                [[0.0], np.cumsum(np.square(block, dtype=np.float64).mean(axis=1))])
            self._mix.append(np.interp(positions, xs, mix_sum))
            self._channel.append(np.interp(positions, xs, channel_sum))
            self.done += len(positions)
            self._mix_total, self._channel_total = float(mix_sum[-1]), float(channel_sum[-1])
        else:
            self._mix_total += float(np.sum(np.square(mix, dtype=np.float64)))
            self._channel_total += float(np.sum(np.square(block, dtype=np.float64).mean(axis=1)))
        self.at = end

    @property
    def total(self) -> float:
        """Energy of the mix so far."""
        return self._mix_total

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        return np.concatenate(self._mix), np.concatenate(self._channel)


@dataclass(frozen=True)
class Envelope:
    """The planned log gain of every slot (energy units): apply with `gain`."""

    log_gain: np.ndarray
    energy: float  # of the mark it makes, per channel, at the recording's rate

    def gain(self, start: int, count: int, rate: float) -> np.ndarray:
        """Amplitude factor for samples ``start .. start + count`` at ``rate``."""
        if not len(self.log_gain):
            return np.ones(count)
        k = np.arange(len(self.log_gain))
        knots = np.stack([k * SLOT_SECONDS + RAMP_SECONDS, (k + 1) * SLOT_SECONDS - RAMP_SECONDS], axis=1).ravel()
        values = np.repeat(0.5 * self.log_gain, 2)
        return np.exp(np.interp((start + np.arange(count)) / rate, knots, values, left=0.0, right=0.0))


def plan(grid: EnergyGrid, bits: np.ndarray, step: float) -> Envelope:
    """``bits``: the pilot and the coded payload (``N_SYMBOLS``). Each slot's gain: slot by slot, the
    difference to the previous (marked) slot onto its bit's lattice of ``step`` (0: no envelope)."""
    mix, channel = grid.arrays()
    if step <= 0:
        return Envelope(np.zeros(0), 0.0)
    slots = (len(mix) - 1) // _GRID
    first = np.arange(slots) * _GRID
    core = mix[first + _GRID - 1] - mix[first + 1]
    whole = channel[first + _GRID] - channel[first]
    loud = core / ((_GRID - 2) * RAMP_SECONDS * grid.rate) > _SILENT_POWER
    f = np.log(np.maximum(core, 1e-30))
    order = _order()
    symbols = order.symbol[np.arange(slots) % N_SYMBOLS]
    target_bits = bits[symbols]
    offsets = (order.dither[symbols] + 0.5 * target_bits) * step
    log_gain = np.zeros(slots)
    previous = None  # the previous slot's marked log energy
    for k in range(slots):
        if not loud[k]:
            previous = None
            continue
        if previous is not None:
            d = f[k] - previous
            log_gain[k] = np.round((d - offsets[k]) / step) * step + offsets[k] - d
        previous = f[k] + log_gain[k]
    energy = float(np.sum(whole * np.expm1(0.5 * log_gain) ** 2))
    return Envelope(log_gain, energy)


def read(mix: np.ndarray, rate: float, lattice_steps: tuple[float, ...]) -> int | None:
    """The id carried by the channel mix ``mix`` at ``rate`` (at most its middle 30 s), or None.

    The pilot is scored on its own slots for every 2-ms offset, step and period shift; the best
    ``_CANDIDATES`` syncs over ``_MIN_PILOT_Z`` are decoded."""
    keep = int(_READ_SECONDS * rate)
    if len(mix) > keep:
        start = (len(mix) - keep) // 2
        mix = mix[start : start + keep]
    slots = int((len(mix) / rate - SLOT_SECONDS) / SLOT_SECONDS)
    if slots < N_SYMBOLS + 2:
        return None
    cumulative = np.concatenate([[0.0], np.cumsum(np.square(mix, dtype=np.float64))])
    order = _order()
    # symbol of each slot 1.. for each period shift; the pilot's entries apart
    which = order.symbol[(np.arange(1, slots)[None, :] + np.arange(N_SYMBOLS)[:, None]) % N_SYMBOLS]
    rows, cols = np.nonzero(which < PILOT_SYMBOLS)
    signs = 2.0 * layout().pilot[which[rows, cols]] - 1.0
    pilot_dither = order.dither[which[rows, cols]]
    # every offset and step at once (float32: the pilot only ranks the syncs, which are decoded in float64)
    offsets = np.arange(0.0, SLOT_SECONDS, _READ_OFFSET)
    d, weight = _differences(cumulative, rate, offsets, slots)  # (offsets, slots - 1)
    turns = d[:, None, cols].astype(np.float32) / np.array(lattice_steps, dtype=np.float32)[None, :, None]
    turns -= pilot_dither.astype(np.float32)
    soft = np.cos(turns * np.float32(2 * np.pi), out=turns)
    soft *= -weight[:, None, cols].astype(np.float32)  # (offsets, steps, pilot entries)
    trials = len(offsets) * len(lattice_steps)
    at = (rows + N_SYMBOLS * np.arange(trials)[:, None]).ravel()
    signed = np.bincount(at, (soft * signs.astype(np.float32)).ravel(), trials * N_SYMBOLS)
    power = np.bincount(at, (soft * soft).ravel(), trials * N_SYMBOLS)
    z = (signed / np.sqrt(power + 1e-12)).reshape(len(offsets), len(lattice_steps), N_SYMBOLS)
    shifts = z.argmax(axis=2)
    candidates = [(float(z[o, k, shifts[o, k]]), float(offsets[o]), lattice_steps[k], int(shifts[o, k]))
                  for o in range(len(offsets)) for k in range(len(lattice_steps))]
    candidates.sort(reverse=True)
    for z, offset, step, shift in candidates[:_CANDIDATES]:
        if z < _MIN_PILOT_Z:
            break
        d, weight = _differences(cumulative, rate, offset, slots)
        soft = -np.cos(2 * np.pi * (d / step - order.dither[which[shift]])) * weight
        per_symbol = np.bincount(which[shift], weights=soft, minlength=N_SYMBOLS)
        mark_id, _ = ecc.decode(per_symbol[PILOT_SYMBOLS:], _MIN_CODEWORD_AGREEMENT)
        if mark_id is not None:
            return mark_id
    return None


def _differences(cumulative: np.ndarray, rate: float, offset: float | np.ndarray,
                 slots: int) -> tuple[np.ndarray, np.ndarray]:
    """For the slots starting at ``offset`` (seconds; an array of offsets gives a row each): each slot's log
    core energy less the previous one's (slots 1..), and its weight: 0 where either is silent, less where
    either is quiet."""
    starts = np.asarray(offset, dtype=np.float64)[..., None] + np.arange(slots) * SLOT_SECONDS
    edges = np.stack([starts + RAMP_SECONDS, starts + SLOT_SECONDS - RAMP_SECONDS], axis=-1) * rate
    at = _at(cumulative, edges.ravel()).reshape(edges.shape)
    core = np.maximum(at[..., 1] - at[..., 0], 0.0)
    level = np.minimum(core[..., 1:], core[..., :-1])
    loud = level / ((SLOT_SECONDS - 2 * RAMP_SECONDS) * rate) > _SILENT_POWER
    weight = loud * level / (level + _QUIET * np.median(level, axis=-1, keepdims=True) + 1e-30)
    return np.diff(np.log(core + 1e-30), axis=-1), weight


def _at(cumulative: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """``cumulative`` linearly interpolated at fractional sample ``positions`` (within its length)."""
    whole = np.clip(np.floor(positions).astype(np.int64), 0, len(cumulative) - 2)
    fraction = positions - whole
    return cumulative[whole] + fraction * (cumulative[whole + 1] - cumulative[whole])
