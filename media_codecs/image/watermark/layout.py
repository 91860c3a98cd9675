"""Which parts of the image carry what: the tile's DFT bins (first layer) and the canonical copy's DCT
coefficients (second layer), both chosen and phased by fixed keys."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from media_codecs import ecc

TILE = 128

_SEED = 0x5EC0_C0DE_2026
_MARK_RMS = 1.69  # luminance units: with the small-copy layer, PSNR ~43.1 dB after the RGB round trip
_BAND = (8.0, 32.0)  # radii in tile-DFT bins (cycles per tile): mid frequencies survive JPEG/resize
_BINS_PER_BIT = 2
_PILOT_ENERGY = 0.25  # share of the mark energy given to the synchronisation pilot

_CODED_BITS = ecc.CODED_BITS

# Second layer, for small copies: quantisation index modulation in a 256 x 256 copy of the whole image
CANON = 256  # side of the canonical copy (the whole image squeezed to a square, whatever its size)
# radii in indices of the canonical copy's 256 x 256 DCT: 0.06-0.16 cycles/pixel. Below, JPEG's block
# means (its DC errors) are the loudest noise; above, the resamplers disagree most (Lanczos, area, cubic).
_CANON_BAND = (32.0, 80.0)
_CANON_SEED = 0x51_2E_2026


@dataclass(frozen=True)
class _Layout:
    """Which rfft bins of the tile carry what: the first ``n_message`` (shuffled) bins carry
    coded bits, the rest the pilot; every bin has a keyed random phase."""

    rows: np.ndarray
    cols: np.ndarray
    phases: np.ndarray
    n_message: int
    bit_of_bin: np.ndarray  # coded-bit index of each message bin
    ring: np.ndarray  # rounded radius of every rfft bin, for per-ring normalisation


@lru_cache(maxsize=1)
def _layout() -> _Layout:
    """Keyed assignment of the tile's mid-frequency rfft bins to pilot and coded bits."""
    ky = np.fft.fftfreq(TILE, 1.0 / TILE)[:, None]
    kx = np.arange(TILE // 2 + 1)[None, :]
    radius = np.hypot(ky, kx)
    in_band = (radius >= _BAND[0]) & (radius <= _BAND[1])
    half_plane = (kx > 0) | (ky > 0)  # each real-signal frequency once
    jpeg_grid = (ky % 16 == 0) & (kx % 16 == 0)  # 8x8 block artefacts land on these bins
    rows, cols = np.nonzero(in_band & half_plane & ~jpeg_grid)
    rng = np.random.default_rng(_SEED)
    order = rng.permutation(len(rows))
    rows, cols = rows[order], cols[order]
    n_message = _CODED_BITS * _BINS_PER_BIT
    if len(rows) < n_message + 64:
        raise RuntimeError("watermark band too narrow for the payload")
    phases = np.exp(2j * np.pi * rng.random(len(rows)))
    bit_of_bin = np.arange(n_message) % _CODED_BITS
    return _Layout(rows, cols, phases, n_message, bit_of_bin, np.rint(radius).astype(np.int64))


@dataclass(frozen=True)
class _CanonLayout:
    """Which coefficients of the canonical copy's DCT carry which coded bit, with what keyed sign, and
    each coded bit's keyed dither (the offset of its quantisation lattice, in steps)."""

    rows: np.ndarray
    cols: np.ndarray
    bit_of: np.ndarray
    weights: np.ndarray  # keyed sign / sqrt(coefficients per bit): a unit-norm carrier per bit
    dither: np.ndarray


@lru_cache(maxsize=1)
def _canon_layout() -> _CanonLayout:
    index_y, index_x = np.mgrid[0:CANON, 0:CANON]
    radius = np.hypot(index_y, index_x)
    rows, cols = np.nonzero((radius >= _CANON_BAND[0]) & (radius <= _CANON_BAND[1]))
    rng = np.random.default_rng(_CANON_SEED)
    order = rng.permutation(len(rows))
    used = len(rows) // _CODED_BITS * _CODED_BITS
    rows, cols = rows[order][:used], cols[order][:used]
    signs = rng.choice([-1.0, 1.0], used)
    return _CanonLayout(rows, cols, np.arange(used) % _CODED_BITS, signs / np.sqrt(used // _CODED_BITS),
                        rng.random(_CODED_BITS))
