"""The first layer: the keyed tile, repeated over the image and scaled by a texture-masking gain."""

from __future__ import annotations

from collections.abc import Callable

import cv2
import numpy as np

from media_codecs.image.watermark.canonical import _CANON_MAX_SIDE, _WHOLE_PLANE_PIXELS, _CanonicalCopy
from media_codecs.image.watermark.layout import _MARK_RMS, _PILOT_ENERGY, CANON, TILE, _layout

_WHITEN_SIGMA = 2.0  # Gaussian removed from the luminance before reading: the host's low frequencies
_LOCAL_POWER_SIGMA = 3.0  # neighbourhood over which host noise power is estimated
# The mark's local amplitude grows as (activity + _MASK_FLOOR) ** 3/4 (0 would be no masking, 1 a mark
# proportional to the activity).
_MASK_FLOOR = 3.0  # luminance units: activity added before the exponent (flat areas keep some mark)
_FLAT_RMS = 0.6  # luminance units: the mark's RMS on a perfectly flat area (sky, walls, gradients)
_HEADROOM, _HEADROOM_MIN_GAIN = 8.0, 0.2  # fade the mark within 8 levels of black/white
_EMBED_BAND = 4 * TILE  # rows embedded at a time: bounded memory on large images
_GRID = 4  # the masking gain is measured on 4x4 blocks
_BLUR_MARGIN = 8  # rows OpenCV's Gaussian of sigma 2 reaches (kernel size 17)


def _tile_pattern(coded: np.ndarray) -> np.ndarray:
    lay = _layout()
    n_message = lay.n_message
    n_pilot = len(lay.rows) - n_message
    signs = 2.0 * coded[lay.bit_of_bin] - 1.0
    amplitudes = np.concatenate([
        signs * np.sqrt((1 - _PILOT_ENERGY) / n_message),
        np.full(n_pilot, np.sqrt(_PILOT_ENERGY / n_pilot)),
    ])
    spectrum = np.zeros((TILE, TILE // 2 + 1), dtype=np.complex128)
    spectrum[lay.rows, lay.cols] = amplitudes * lay.phases
    tile = np.fft.irfft2(spectrum, s=(TILE, TILE))
    return (tile * (_MARK_RMS / tile.std())).astype(np.float32)


def _host_measures(luma_rows: Callable[[int, int], np.ndarray], height: int, width: int,
                   whole_plane_pixels: int = _WHOLE_PLANE_PIXELS) -> tuple[np.ndarray, _CanonicalCopy | None]:
    """One pass over the luminance, band by band: the masking gain grid and, on images of at least
    ``CANON`` pixels a side (and at most ``_CANON_MAX_SIDE``), the makings of the canonical copy (the
    whole image area-resized to ``CANON`` x ``CANON``)."""
    # Local activity varies slowly, so it is measured on 4x4 block means, computed band by band
    # with enough rows around each band for the Gaussian to see what it would see on the whole plane.
    energy, mean_y = [], []
    with_canonical = min(height, width) >= CANON and max(height, width) <= _CANON_MAX_SIDE
    host_copy = _CanonicalCopy(height, width, whole_plane_pixels) if with_canonical else None
    gridded = height - height % _GRID
    for top in range(0, gridded, _EMBED_BAND):
        bottom = min(gridded, top + _EMBED_BAND)
        first, last = max(0, top - _BLUR_MARGIN), min(height, bottom + _BLUR_MARGIN)
        y = np.ascontiguousarray(luma_rows(first, last), dtype=np.float32)
        residual = (y - cv2.GaussianBlur(y, (0, 0), _WHITEN_SIGMA))[top - first : bottom - first]
        energy.append(_block_means(residual * residual))
        mean_y.append(_block_means(y[top - first : bottom - first]))
        if host_copy is not None:
            # the last band also takes the rows below the 4x4 grid (they are within its blur margin)
            band_end = height if bottom == gridded else bottom
            host_copy.add(top, y[top - first : band_end - first])
    small, small_y = np.concatenate(energy), np.concatenate(mean_y)
    return _masking_gain(small, small_y), host_copy


def _masking_gain(small: np.ndarray, small_y: np.ndarray) -> np.ndarray:
    """Per-pixel mark gain on a 4x coarser grid (from the 4x4 block means of the residual's energy and
    of the luminance): more mark in busy texture, where it is least visible, less on flat areas such
    as sky or skin."""
    activity = cv2.sqrt(cv2.GaussianBlur(small, (0, 0), _LOCAL_POWER_SIGMA / 2))
    gain = _mask_gain(activity)
    # near black or white half the mark is clipped away and the rest is pure distortion
    headroom = np.minimum(small_y, 255.0 - small_y)
    gain *= np.clip(headroom / _HEADROOM, _HEADROOM_MIN_GAIN, 1.0)
    # the gain is absolute (flat areas get _FLAT_RMS whatever the rest of the image), and only
    # scaled down when the whole would exceed the RMS budget: a flat image carries a faint mark
    mean_square = float(np.mean(gain * gain))
    if mean_square > 1.0:
        gain *= 1.0 / np.sqrt(mean_square)
    return gain


def _mask_gain(activity: np.ndarray) -> np.ndarray:
    """Mark amplitude per unit of ``_MARK_RMS`` for a local activity (RMS of the host's residual):
    ``_FLAT_RMS / _MARK_RMS`` on a flat area, growing with the texture that hides it."""
    return _masking_curve(activity) * np.float32(_FLAT_RMS / _MARK_RMS / _MASK_FLOOR**0.75)


def _masking_curve(activity: np.ndarray) -> np.ndarray:
    """(activity + floor) ** 3/4, as two square roots (a power would cost 5x more on a read)."""
    root = cv2.sqrt(activity + np.float32(_MASK_FLOOR))
    return cv2.multiply(root, cv2.sqrt(root))


def _block_means(rows: np.ndarray) -> np.ndarray:
    """Means of the whole ``_GRID`` x ``_GRID`` blocks (a ragged right or bottom edge is left out)."""
    height, width = rows.shape[0] // _GRID * _GRID, rows.shape[1] // _GRID * _GRID
    # OpenCV's area resize by a whole factor is the block mean, 13x faster than numpy's mean over
    # two strided axes (8 ms of a 1 MP signing).
    return cv2.resize(rows[:height, :width], (width // _GRID, height // _GRID), interpolation=cv2.INTER_AREA)


def _resized_rows(grid: np.ndarray, height: int, width: int, top: int, bottom: int) -> np.ndarray:
    """Rows ``top..bottom`` of the grid bilinearly resized to ``height`` x ``width`` (OpenCV's
    INTER_LINEAR mapping: pixel centres aligned, edges clamped), without the full-size plane."""
    grid_height = grid.shape[0]
    source = (np.arange(top, bottom) + 0.5) * (grid_height / height) - 0.5
    below = np.floor(source).astype(np.int64)
    weight = (source - below).astype(np.float32)[:, None]
    upper, lower = grid[np.clip(below, 0, grid_height - 1)], grid[np.clip(below + 1, 0, grid_height - 1)]
    rows = upper * (1 - weight) + lower * weight
    return cv2.resize(rows, (width, bottom - top), interpolation=cv2.INTER_LINEAR)
