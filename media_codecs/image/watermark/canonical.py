"""The second layer, for small copies: quantisation index modulation in the canonical copy (the whole image
area-resized to ``CANON`` x ``CANON``), written through the resampling round trip and read from any size."""

from __future__ import annotations

from functools import lru_cache

import cv2
import numpy as np

from media_codecs import ecc
from media_codecs.image.watermark.layout import _CODED_BITS, CANON, _canon_layout

_QIM_STEP = 22.0  # lattice step of a coded bit's projection: ~0.4 level RMS over the image
_CANON_MAX_SIDE = 16384  # the resampling matrices are CANON x side: 16 MB each at most
_FIRST_LAYER_SHARE_SIDE = 4 * CANON
_ROUND_TRIP_REACH = 2  # diagonals either side kept of the resampling round trip (it uses one)
_WHOLE_PLANE_PIXELS = 4_000_000  # the canonical copy is made from the whole plane up to 16 MB of float32
_QIM_PASSES = 3  # the resampling round trip and the masking are not the identity: re-aim twice more
_CANON_MIN_AGREEMENT = 0.70  # unmarked images reach at most 0.63 (2,000 tried), 256-px JPEG 75 copies 0.90


@lru_cache(maxsize=2)  # an image's height and width: up to 16 MB each at _CANON_MAX_SIDE
def _area_matrix(size: int) -> np.ndarray:
    """``CANON`` x ``size``: the area means of a downscale from ``size`` to ``CANON`` samples (each
    output averages its share of the input, as OpenCV's INTER_AREA does)."""
    scale = size / CANON
    starts = np.arange(CANON)[:, None] * scale
    pixels = np.arange(size)[None, :]
    overlap = np.minimum(starts + scale, pixels + 1) - np.maximum(starts, pixels)
    return (np.clip(overlap, 0, None) / scale).astype(np.float32)


def _linear_matrix(size: int) -> np.ndarray:
    """``size`` x ``CANON``: the bilinear upscale from ``CANON`` to ``size`` samples that
    ``_resized_rows`` applies."""
    return cv2.resize(np.eye(CANON, dtype=np.float32), (CANON, size), interpolation=cv2.INTER_LINEAR)


class _CanonicalCopy:
    """The canonical copy of an image given band by band, to which a second plane of the same size (a
    layer) may be added band by band before the result is taken: the area means are linear. Up to
    ``_WHOLE_PLANE_PIXELS`` the bands are copied into one plane, resized at once (fast); above, each
    band is added to the canonical copy as it comes (bounded memory)."""

    def __init__(self, height: int, width: int, whole_plane_pixels: int = _WHOLE_PLANE_PIXELS):
        self.whole = height * width <= whole_plane_pixels
        self.plane = np.empty((height, width), dtype=np.float32) if self.whole else None
        self.canonical = None if self.whole else np.zeros((CANON, CANON), dtype=np.float32)
        self.weights = None if self.whole else _area_matrix(height)

    def add(self, top: int, rows: np.ndarray) -> None:
        if self.whole:
            self.plane[top : top + len(rows)] = rows
        else:
            _add_to_canonical(self.canonical, rows, self.weights[:, top : top + len(rows)])

    def add_layer(self, top: int, rows: np.ndarray) -> None:
        if self.whole:
            self.plane[top : top + len(rows)] += rows
        else:
            _add_to_canonical(self.canonical, rows, self.weights[:, top : top + len(rows)])

    def result(self) -> np.ndarray:
        return _canonical_copy(self.plane) if self.whole else self.canonical


def _canonical_copy(y: np.ndarray) -> np.ndarray:
    """``y`` area-resized to ``CANON`` x ``CANON``: height first, then width (the same area means as in
    one call, a third of the time on a 12 MP image)."""
    y = np.ascontiguousarray(y, dtype=np.float32)
    return cv2.resize(cv2.resize(y, (y.shape[1], CANON), interpolation=cv2.INTER_AREA), (CANON, CANON),
                      interpolation=cv2.INTER_AREA)


def _add_to_canonical(canonical: np.ndarray, rows: np.ndarray, weights: np.ndarray) -> None:
    """Add a band of rows to the canonical copy, given their columns of the heightwise area matrix."""
    reached = np.flatnonzero(weights.any(axis=1))  # the few canonical rows these rows fall in
    first, last = int(reached[0]), int(reached[-1]) + 1
    # heightwise first (a small matrix product), then widthwise: OpenCV's area resize is slow across
    down = np.ascontiguousarray(weights[first:last] @ rows)
    canonical[first:last] += cv2.resize(down, (CANON, last - first), interpolation=cv2.INTER_AREA)


@lru_cache(maxsize=16)
def _round_trip(size: int) -> tuple[np.ndarray, np.ndarray]:
    """What the canonical copy sees of a canonical-size change resized to ``size`` samples (bilinear
    up, area down: close to, not quite, the identity), as the diagonals of that ``CANON`` x ``CANON``
    matrix: ``(offsets, weights)`` with ``weights[k, i]`` its entry ``[i, i + offsets[k]]``. Bilinear
    reaches one sample either side and the area means stay within one, so it is banded."""
    matrix = _area_matrix(size) @ _linear_matrix(size)
    offsets = np.arange(-_ROUND_TRIP_REACH, _ROUND_TRIP_REACH + 1)
    weights = np.zeros((len(offsets), CANON), dtype=np.float32)
    for k, offset in enumerate(offsets):
        diagonal = np.diagonal(matrix, offset)
        weights[k, max(0, -offset) : max(0, -offset) + len(diagonal)] = diagonal
    return offsets, weights


def _apply_round_trip(change: np.ndarray, rows: tuple[np.ndarray, np.ndarray],
                      cols: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """``R_rows @ change @ R_cols.T`` from the two round trips' diagonals (a few shifted products
    instead of two 256^3 matrix products)."""
    return _apply_banded(_apply_banded(change, rows).T, cols).T


def _apply_banded(x: np.ndarray, trip: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    offsets, weights = trip
    out = np.zeros_like(x)
    for k, offset in enumerate(offsets):
        if offset >= 0:
            out[: CANON - offset] += weights[k, : CANON - offset, None] * x[offset:]
        else:
            out[-offset:] += weights[k, -offset:, None] * x[: CANON + offset]
    return out


def _canon_projections(canonical: np.ndarray) -> np.ndarray:
    """Each coded bit's projection: its keyed carrier (unit norm) against the canonical copy's DCT."""
    lay = _canon_layout()
    coefficients = cv2.dct(np.ascontiguousarray(canonical, dtype=np.float32))[lay.rows, lay.cols]
    return np.bincount(lay.bit_of, weights=coefficients * lay.weights, minlength=_CODED_BITS)


def _canon_change(canonical: np.ndarray, coded: np.ndarray, height: int, width: int,
                  gain_grid: np.ndarray) -> np.ndarray:
    """The ``CANON`` x ``CANON`` change which, resized to the image, moves every coded bit's projection
    in the canonical copy onto its bit's lattice (step ``_QIM_STEP``, keyed dither, half a step apart
    for a 0 and a 1).

    Quantising the projection instead of adding to it is what makes this layer work where a spread
    carrier did not: the host's own texture, the noise an additive mark must outshout in a copy this
    small, does not count, only what the re-share changes (resampling, JPEG) does.
    """
    lay = _canon_layout()
    round_rows, round_cols = _round_trip(height), _round_trip(width)
    offsets = lay.dither + coded / 2.0
    host = _canon_projections(canonical)
    targets = (np.round(host / _QIM_STEP - offsets) + offsets) * _QIM_STEP  # the nearest point of each lattice
    # the change follows the masking gain (texture takes more of it, flat areas less), at mean 1
    mask = cv2.resize(gain_grid, (CANON, CANON), interpolation=cv2.INTER_AREA)
    mask *= 1.0 / max(float(mask.mean()), 1e-6)
    change = np.zeros((CANON, CANON), dtype=np.float32)
    coefficients = np.zeros((CANON, CANON), dtype=np.float32)
    projections = host  # nothing changed yet
    for done in range(_QIM_PASSES):
        if done:
            projections = _canon_projections(canonical + _apply_round_trip(change, round_rows, round_cols))
        coefficients[lay.rows, lay.cols] = (targets - projections)[lay.bit_of] * lay.weights
        change += mask * cv2.idct(coefficients)
    return change


def _read_canonical(y: np.ndarray) -> int | None:
    """The id carried by the small-copy layer of luminance ``y`` (any size: it is resized to the
    canonical copy), or None."""
    canonical = _canonical_copy(y)
    phase = _canon_projections(canonical) / _QIM_STEP - _canon_layout().dither
    soft = -np.cos(2.0 * np.pi * phase)  # +1 half a step off the dithered lattice (a 1), -1 on it (a 0)
    return ecc.decode(soft, _CANON_MIN_AGREEMENT)[0]
