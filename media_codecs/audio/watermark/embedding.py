"""How the audio mark is written: per-cell gains that move each symbol copy onto its bit's lattice.

The symbol's projection (the sum of its pair differences, `layout.projections`) is *quantised*
(spread-transform dither modulation): the host's own fluctuations are not noise to fight but a
value to move to the nearest point of the bit's lattice, which costs little energy. The change is
a per-cell gain, so the mark has the host's spectral and temporal shape (masked by it, absent in
silence). Within a budget, the dearest symbol copies are moved only part of the way (`_targets`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from media_codecs.audio import spectrum as sp
from media_codecs.audio.watermark.layout import PAIRS, PERIOD_SLOTS, layout, projections

_MAX_CELL_CHANGE = 1.0  # at most +-4.3 dB on one cell
_COST_SLOT_SHARE = 0.1  # 0: cheapest mark (in quiet cells); large: uniform log change
_NOISE_DESIGN_DB = 30.0
_CELL_NOISE_GAIN = sp.SLOT_FRAMES * sp.BAND_BINS * sp.FRAME / 2  # cell energy per unit noise variance
CELL_ENERGY_PER_SAMPLE_ENERGY = sp.FRAME / 2  # Parseval for the sqrt-Hann STFT at half overlap
_BUDGET_SHARE = 0.9  # of the budget planned for: the correcting passes add a little
_EMBED_PASSES = 6  # re-measure and correct: overlap-add smears each pass's cell gains


def mark_signal(x: np.ndarray, bits: np.ndarray, step: float, power: float,
                budget: float | None = None) -> np.ndarray:
    """The 8 kHz mark (float32): cell gains found by quantising every symbol copy, refined over passes.

    With ``budget`` (mark energy in cell units), the symbol copies that would cost the most are moved
    only part of the way, so that the whole fits (see `_targets`). Spectra are computed a block at a
    time (``sp.band_power_blocks``, ``sp.cell_mark``): only the signal, the mark and per-cell arrays
    are held."""
    energy = sp.cell_energy(sp.band_power_blocks(x))
    # what a change of one cell costs: its own energy, plus a share of its slot's (masking)
    cost = energy + _COST_SLOT_SHARE * energy.mean(axis=1, keepdims=True) + 1e-12
    # a cell's energy from white noise at _NOISE_DESIGN_DB under the whole signal: cells far
    # under it are lost to such noise, so the change goes preferably into cells above it
    noise_cell = _CELL_NOISE_GAIN * power * 10 ** (-_NOISE_DESIGN_DB / 10)
    log_gain = np.zeros_like(energy)
    marked_energy, mark, targets = energy, None, None
    for _ in range(_EMBED_PASSES):
        feat, weight = sp.features(marked_energy)
        # the push prefers cells above the noise; the projection still moves by the cell's weight
        push = weight * marked_energy / (marked_energy + noise_cell + 1e-30) / cost
        if targets is None:
            targets, allowances = _targets(feat, push, weight, energy, bits, step, budget)
        log_gain += _gain_steps(feat, push, weight, targets)
        np.clip(log_gain, -_MAX_CELL_CHANGE, _MAX_CELL_CHANGE, out=log_gain)
        if allowances is not None:
            _keep_allowances(log_gain, energy, allowances)
        mark = None  # the previous pass's mark is not kept beside the next one
        mark = sp.cell_mark(x, log_gain, np.float32)
        marked_energy = sp.cell_energy(sp.band_power_blocks(x, mark))
    return mark


@dataclass(frozen=True)
class _Move:
    """How one period copy's symbols move: the cells of each symbol wholly inside (``ta``, ``tb``,
    ``band``: symbols x pairs), each cell's push and the scale that reaches the symbol's target."""

    ta: np.ndarray
    tb: np.ndarray
    band: np.ndarray
    pa: np.ndarray
    pb: np.ndarray
    scale: np.ndarray


def _move(feat: np.ndarray, push: np.ndarray, weight: np.ndarray, start: int, target: np.ndarray) -> _Move:
    """Cell k of a symbol changes by ``scale * u_k * push_k``: with ``push = weight / cost`` this is the
    cheapest change (in mark energy) that moves the projection by the needed amount. ``weight`` is
    how much a cell's log change moves its feature (``sp.features``); ``push`` may discount cells
    further (under the noise), which must not change how far the projection moves."""
    lay = layout()
    projection, inside = projections(feat, start)
    ta, tb, band = (lay.slot_a + start)[inside], (lay.slot_b + start)[inside], lay.band[inside]
    pa, pb = push[ta, band], push[tb, band]
    moved = (pa * weight[ta, band] + pb * weight[tb, band]).sum(axis=1) + 1e-30
    scale = (target - projection)[inside] * np.sqrt(2 * PAIRS) / moved
    # a symbol with no cell that can move (silence, a bare tone) is left alone, not forced
    largest = np.maximum(pa.max(axis=1), pb.max(axis=1)) * np.abs(scale) + 1e-30
    scale *= np.minimum(1.0, _MAX_CELL_CHANGE / largest)
    return _Move(ta, tb, band, pa, pb, scale)


def _targets(feat: np.ndarray, push: np.ndarray, weight: np.ndarray, energy: np.ndarray, bits: np.ndarray,
             step: float, budget: float | None) -> tuple[dict[int, np.ndarray], dict | None]:
    """The projection each symbol copy is moved to, per period start: the nearest point of its bit's
    lattice. Chosen once and kept, so later passes only correct what overlap-add smeared instead of
    hopping between points.

    Over ``budget``, a symbol copy costing more than a threshold is moved only part of the way, to
    spend exactly that threshold (distortion compensation): scaling the whole mark down instead
    would leave every symbol short of its point, the cheap ones included."""
    lay = layout()
    offset = (lay.dither + 0.5 * bits) * step
    targets, moves = {}, {}
    for start in range(0, len(feat), PERIOD_SLOTS):
        projection, _ = projections(feat, start)
        targets[start] = np.round((projection - offset) / step) * step + offset
        moves[start] = _move(feat, push, weight, start, targets[start])
    if budget is None:
        return targets, None
    costs = {start: _move_energy(move, energy) for start, move in moves.items()}
    limit = _water_level(np.concatenate(list(costs.values())), budget * _BUDGET_SHARE)
    allowances = {}
    for start, target in targets.items():
        projection, inside = projections(feat, start)
        share = np.ones_like(target)
        share[inside] = np.sqrt(np.minimum(1.0, limit / (costs[start] + 1e-30)))
        targets[start] = projection + share * (target - projection)
        allowances[start] = (moves[start], np.minimum(costs[start], limit))
    return targets, allowances


def _keep_allowances(log_gain: np.ndarray, energy: np.ndarray,
                     allowances: dict[int, tuple[_Move, np.ndarray]]) -> None:
    """Scale down, in place, the cell changes of each symbol copy that costs more than its allowance:
    the correcting passes would otherwise pour energy into symbols that overlap-add keeps smearing."""
    for move, allowance in allowances.values():
        cells_a, cells_b = (move.ta, move.band), (move.tb, move.band)
        spent = (np.expm1(0.5 * log_gain[cells_a]) ** 2 * energy[cells_a]
                 + np.expm1(0.5 * log_gain[cells_b]) ** 2 * energy[cells_b]).sum(axis=1)
        factor = np.sqrt(np.minimum(1.0, allowance / (spent + 1e-30)))[:, None]
        log_gain[cells_a] *= factor
        log_gain[cells_b] *= factor


def _move_energy(move: _Move, energy: np.ndarray) -> np.ndarray:
    """Spectral energy of each symbol's change: a cell scaled by exp(g / 2) changes by (exp(g / 2) - 1)^2
    of its energy."""
    gain_a = np.clip(move.scale[:, None] * move.pa, -_MAX_CELL_CHANGE, _MAX_CELL_CHANGE)
    gain_b = np.clip(-move.scale[:, None] * move.pb, -_MAX_CELL_CHANGE, _MAX_CELL_CHANGE)
    change_a, change_b = np.expm1(0.5 * gain_a) ** 2, np.expm1(0.5 * gain_b) ** 2
    return (change_a * energy[move.ta, move.band] + change_b * energy[move.tb, move.band]).sum(axis=1)


def _water_level(costs: np.ndarray, budget: float) -> float:
    """The threshold t with sum(min(costs, t)) = budget (infinite when the whole fits)."""
    if costs.sum() <= budget:
        return np.inf
    ordered = np.sort(costs)
    spent_below = np.concatenate([[0.0], np.cumsum(ordered)[:-1]])
    # spending with threshold ordered[i]: everything below in full, ordered[i] for the rest
    spent = spent_below + ordered * (len(ordered) - np.arange(len(ordered)))
    i = int(np.searchsorted(spent, budget))
    return float((budget - spent_below[i]) / (len(ordered) - i))


def _gain_steps(feat: np.ndarray, push: np.ndarray, weight: np.ndarray,
                targets: dict[int, np.ndarray]) -> np.ndarray:
    """Log-energy change per cell that moves each symbol's projection onto its target."""
    steps = np.zeros_like(feat)
    for start, target in targets.items():
        move = _move(feat, push, weight, start, target)
        steps[move.ta, move.band] += move.scale[:, None] * move.pa
        steps[move.tb, move.band] -= move.scale[:, None] * move.pb
    return steps
