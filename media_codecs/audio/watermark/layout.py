"""Where each symbol of the audio mark lives: the keyed layout of cell pairs over one period.

Every symbol owns ``PAIRS`` pairs of cells, both cells of a pair in the same band and the same
0.77 s group (``GROUP_SLOTS`` slots), so a gain, an equaliser or a low-pass cancels out of their
difference. The layout repeats every ``PERIOD_SLOTS`` slots (8.4 s).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from media_codecs import ecc
from media_codecs.audio import spectrum as sp

_SEED = 0xA0D1_0C0D_2026
PILOT_SYMBOLS = 48
PAIRS = 5  # cell pairs per symbol
GROUP_SLOTS = 12  # a symbol's cells lie within 12 slots (0.77 s)
# Quantiser steps of a symbol's projection (natural-log energy units), strongest first: the
# embedder takes the largest whose mark fits the SNR budget, the reader tries each.
STEPS = (2.0, 1.6, 1.27, 1.0)

N_SYMBOLS = PILOT_SYMBOLS + ecc.CODED_BITS
_PAIRS_PER_GROUP = GROUP_SLOTS // 2 * sp.N_BANDS
_SYMBOLS_PER_GROUP = _PAIRS_PER_GROUP // PAIRS
PERIOD_SLOTS = -(-N_SYMBOLS // _SYMBOLS_PER_GROUP) * GROUP_SLOTS
PERIOD_SECONDS = PERIOD_SLOTS * sp.SLOT / sp.RATE


@dataclass(frozen=True)
class Layout:
    """Cells of every symbol within one period: pair ``j`` of symbol ``i`` is
    ``+(slot_a[i, j], band[i, j]) - (slot_b[i, j], band[i, j])``."""

    slot_a: np.ndarray
    slot_b: np.ndarray
    band: np.ndarray
    dither: np.ndarray  # per symbol, in lattice steps
    pilot: np.ndarray  # the known pilot bits


@lru_cache(maxsize=1)
def layout() -> Layout:
    """Keyed assignment: symbols shuffled over the groups, pairs shuffled within a group."""
    rng = np.random.default_rng(_SEED)
    n_groups = PERIOD_SLOTS // GROUP_SLOTS
    order = rng.permutation(n_groups * _SYMBOLS_PER_GROUP)  # extra symbol places stay unused
    slot_a = np.zeros((N_SYMBOLS, PAIRS), dtype=np.int64)
    slot_b, band = np.zeros_like(slot_a), np.zeros_like(slot_a)
    for group in range(n_groups):
        pairs = []
        for b in range(sp.N_BANDS):
            slots = group * GROUP_SLOTS + rng.permutation(GROUP_SLOTS)
            pairs.extend((slots[2 * i], slots[2 * i + 1], b) for i in range(GROUP_SLOTS // 2))
        pairs = np.array(pairs)[rng.permutation(len(pairs))].reshape(_SYMBOLS_PER_GROUP, PAIRS, 3)
        for place, symbol in enumerate(order[group * _SYMBOLS_PER_GROUP : (group + 1) * _SYMBOLS_PER_GROUP]):
            if symbol < N_SYMBOLS:
                slot_a[symbol], slot_b[symbol], band[symbol] = pairs[place].T
    return Layout(slot_a, slot_b, band, rng.random(N_SYMBOLS), rng.integers(0, 2, PILOT_SYMBOLS))


def projections(feat: np.ndarray, start: np.ndarray | int,
                symbols: slice = slice(None)) -> tuple[np.ndarray, np.ndarray]:
    """Each symbol's projection for the period copies starting at slots ``start`` (any shape,
    may be negative), and a mask of the symbols wholly inside ``feat``: shape start + (symbols,)."""
    lay = layout()
    start = np.asarray(start)[..., None, None]
    ta, tb, band = lay.slot_a[symbols] + start, lay.slot_b[symbols] + start, lay.band[symbols]
    inside = (np.minimum(ta, tb).min(axis=-1) >= 0) & (np.maximum(ta, tb).max(axis=-1) < len(feat))
    ta, tb = np.clip(ta, 0, len(feat) - 1), np.clip(tb, 0, len(feat) - 1)
    projection = (feat[ta, band] - feat[tb, band]).sum(axis=-1) / np.sqrt(2 * PAIRS)
    return projection, inside
