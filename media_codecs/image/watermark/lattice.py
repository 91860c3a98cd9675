"""The lattice search: undoing a scale, rotation or aspect change from the autocorrelation of the whitened
image, whose peaks lie on the (distorted) tile lattice."""

from __future__ import annotations

from functools import lru_cache

import cv2
import numpy as np

from media_codecs.image.watermark.layout import TILE
from media_codecs.image.watermark.reading import _read_with_score

_SYNC_WINDOW = 1024  # window for the (slower) scale/rotation search
_SCALE_RANGE = (0.45, 1.6)  # tile-vector lengths the lattice search considers, in tiles
_ASPECT_RANGE = (0.7, 1.43)  # ratio of the two tile vectors' lengths (aspect-ratio changes to 0.8-1.25)
_MAX_SHEAR_COSINE = 0.3  # the tile vectors stay within ~17° of perpendicular
_PEAK_EMPHASIS, _PEAK_BOX = 1.0, 7
_REFINE_MIN_SCORE = 5.0  # pilot score (best of 4 flips) of a failed lattice guess worth refining
_REFINE_STEPS = (-0.01, -0.005, 0.005, 0.01)  # relative nudges of each axis's scale
_LATTICE_PEAKS = 32  # strongest autocorrelation peaks of each axis, paired with every peak of the other
_AXIS_PEAKS = 512  # at most this many peaks per axis (bounded time on busy images)
_LATTICE_POINTS = ((1, 0), (0, 1), (1, 1), (1, -1), (2, 0), (0, 2), (2, 1), (1, 2), (2, -1), (1, -2))


def _autocorrelation(residual: np.ndarray, max_lag: int) -> np.ndarray:
    """Per-overlap autocorrelation of the whitened image ``residual`` for lags up to ``max_lag``
    (array of side 2 * max_lag + 1, zero lag at the centre)."""
    height, width = residual.shape
    # padding by max_lag keeps those lags linear (no wrap-around)
    size_y = cv2.getOptimalDFTSize(max(height, max_lag + 1) + max_lag)
    size_x = cv2.getOptimalDFTSize(max(width, max_lag + 1) + max_lag)
    padded = np.zeros((size_y, size_x), dtype=np.float32)
    padded[:height, :width] = residual
    spectrum = cv2.dft(padded, flags=cv2.DFT_COMPLEX_OUTPUT)
    # magnitude instead of power: a sharper autocorrelation, less dominated by strong edges
    magnitude = np.zeros_like(spectrum)
    modulus = cv2.magnitude(spectrum[..., 0], spectrum[..., 1])
    if _PEAK_EMPHASIS:
        # the tiling puts the mark on isolated spectral lines, the host spreads smoothly: keep what
        # stands above its neighbourhood, which makes the lattice stand out of textured images
        background = cv2.blur(modulus, (_PEAK_BOX, _PEAK_BOX), borderType=cv2.BORDER_REFLECT)
        modulus = np.maximum(modulus - _PEAK_EMPHASIS * background, 0)
    magnitude[..., 0] = modulus
    acf = cv2.idft(magnitude, flags=cv2.DFT_REAL_OUTPUT | cv2.DFT_SCALE)
    rows = np.arange(-max_lag, max_lag + 1) % size_y  # the lags we keep, zero lag at the centre
    cols = np.arange(-max_lag, max_lag + 1) % size_x
    acf = acf[np.ix_(rows, cols)]
    lags = np.abs(np.arange(-max_lag, max_lag + 1))
    overlap = np.outer(height - lags, width - lags).astype(np.float32)
    # by the square root of the overlap: noise of equal strength at every lag (a z-score), so far
    # lags with little overlap do not outrank the tile vectors
    return acf / np.sqrt(np.maximum(overlap, 0.05 * height * width))


def _lattice_candidates(residual: np.ndarray, count: int = 6) -> list[np.ndarray]:
    """Likely 2x2 maps (columns: observed tile x/y vectors) from the autocorrelation peaks of the
    whitened image ``residual``.

    The tiling makes the autocorrelation peak on a lattice spanned by the two observed tile
    vectors: a similarity of the square grid after a scale or rotation, a general affine one after
    an aspect-ratio change (or both). A pair of peaks (u near the x axis, v near the y axis) is
    scored with the peaks its lattice implies at u + v, u - v, 2u, ..., which tells the tiling
    apart from the image's own repetitive texture.
    """
    longest = min(_SCALE_RANGE[1] * TILE, 0.75 * min(residual.shape))
    max_lag = int(np.ceil(longest * np.sqrt(2))) + 2  # room for the diagonals
    acf = _autocorrelation(residual, max_lag)
    u, v = _axis_peaks(acf, max_lag, longest)
    if len(u) == 0 or len(v) == 0:
        return []
    # One tile vector often stands out while the other is buried among the host's peaks (a codec's
    # block grid, texture): the strongest few of each axis are paired with every peak of the other.
    strong = _LATTICE_PEAKS
    blocks = [(u[:strong], v), (u[strong:], v[:strong])]
    near_max = cv2.dilate(acf, np.ones((3, 3), np.uint8))  # tolerate a pixel of lattice distortion
    scores, bases = [], []
    for us, vs in blocks:
        if len(us) == 0:
            continue
        scores.append(_lattice_scores(acf, near_max, max_lag, us, vs).ravel())
        pair_u, pair_v = np.repeat(us, len(vs), axis=0), np.tile(vs, (len(us), 1))
        bases.append(np.stack([pair_u, pair_v], axis=-1))  # (y, x) rows, columns u, v
    score, basis = np.concatenate(scores), np.concatenate(bases).astype(np.float64)
    plausible = np.flatnonzero(np.isfinite(score))
    if len(plausible) > count:
        plausible = plausible[np.argpartition(score[plausible], -count)[-count:]]
    maps = []
    for best in plausible[np.argsort(score[plausible])[::-1]]:
        refined = _refine_lattice(acf, max_lag, basis[best])
        maps.append(refined[::-1] / TILE)  # rows x, y
    return maps


def _axis_peaks(acf: np.ndarray, max_lag: int, longest: float) -> tuple[np.ndarray, np.ndarray]:
    """Local maxima of the autocorrelation at tile-like lags, strongest first, as (y, x) lags:
    those within 45° of +x (candidates for the x tile vector) and within 45° of +y."""
    local_max = acf >= cv2.dilate(acf, np.ones((5, 5), np.uint8))

    def strongest(cone: np.ndarray) -> np.ndarray:
        ys, xs = np.nonzero(local_max & cone)
        keep = np.argsort(acf[ys, xs])[::-1][:_AXIS_PEAKS]
        return np.stack([ys[keep] - max_lag, xs[keep] - max_lag], axis=-1)

    x_cone, y_cone = _lag_cones(max_lag, longest)
    return strongest(x_cone), strongest(y_cone)


@lru_cache(maxsize=8)
def _lag_cones(max_lag: int, longest: float) -> tuple[np.ndarray, np.ndarray]:
    """Masks of the lags (side 2 * max_lag + 1) a tile vector may take: length in the scale range,
    within 45° of +x for the x vector, within 45° of +y for the y vector (cached: large images
    all have the same lag range)."""
    lag_y, lag_x = np.mgrid[-max_lag : max_lag + 1, -max_lag : max_lag + 1]
    lag = np.hypot(lag_y, lag_x)
    in_range = (lag >= _SCALE_RANGE[0] * TILE) & (lag <= longest)
    return (in_range & (lag_x > 0) & (np.abs(lag_y) <= lag_x),
            in_range & (lag_y > 0) & (np.abs(lag_x) < lag_y))


def _lattice_scores(acf: np.ndarray, near_max: np.ndarray, max_lag: int, u: np.ndarray,
                    v: np.ndarray) -> np.ndarray:
    """Score of every pair (u[i], v[j]) of (y, x) lags as a tile lattice: the autocorrelation (a
    z-score at every lag) summed over its points near the origin, divided by the square root of
    their number; -inf for pairs no aspect change or small rotation of the square tile gives."""
    uy, ux, vy, vx = u[:, 0, None], u[:, 1, None], v[None, :, 0], v[None, :, 1]
    length_u, length_v = np.hypot(uy, ux), np.hypot(vy, vx)
    cosine = (uy * vy + ux * vx) / (length_u * length_v)
    plausible = ((length_v / length_u >= _ASPECT_RANGE[0]) & (length_v / length_u <= _ASPECT_RANGE[1])
                 & (np.abs(cosine) <= _MAX_SHEAR_COSINE))
    total, terms = np.zeros(plausible.shape), np.zeros(plausible.shape)
    for i, j in _LATTICE_POINTS:
        py, px = i * uy + j * vy, i * ux + j * vx
        inside = (np.abs(py) <= max_lag) & (np.abs(px) <= max_lag)
        table = acf if (i, j) in ((1, 0), (0, 1)) else near_max
        value = table[np.clip(py + max_lag, 0, 2 * max_lag), np.clip(px + max_lag, 0, 2 * max_lag)]
        total += np.where(inside, value, 0.0)
        terms += inside
    score = total / np.sqrt(np.maximum(terms, 1))
    return np.where(plausible, score, -np.inf)


def _refine_lattice(acf: np.ndarray, max_lag: int, basis: np.ndarray) -> np.ndarray:
    """Least-squares fit of the lattice basis (columns u, v as (y, x)) to every lattice peak
    i*u + j*v inside the autocorrelation: far peaks pin the tile size to a fraction of a pixel,
    which a single peak's interpolation (biased towards whole pixels) cannot."""
    rows, points = [], []
    limit = max_lag - 2
    for i in range(-3, 4):
        for j in range(0, 4):
            if (j == 0 and i <= 0) or abs(i) + j > 4:
                continue  # one of each +-pair (the autocorrelation is symmetric), not the origin
            predicted = basis @ np.array([i, j], dtype=np.float64)
            if np.max(np.abs(predicted)) > limit - 1:
                continue
            peak = _centroid(acf, int(np.rint(predicted[0])) + max_lag, int(np.rint(predicted[1])) + max_lag)
            if peak is not None:
                rows.append((i, j))
                points.append(peak - max_lag)
    if len(rows) < 3:
        return basis
    solution, *_ = np.linalg.lstsq(np.array(rows, dtype=np.float64), np.array(points), rcond=None)
    refined = solution.T  # columns u, v
    if np.max(np.abs(refined - basis)) > 2.0:
        return basis  # the far peaks disagree: keep the one we trusted
    return refined


def _centroid(acf: np.ndarray, row: int, col: int) -> np.ndarray | None:
    """Sub-pixel (y, x) of the strongest point within one pixel of (row, col): the centre of mass
    of its 3x3 neighbourhood above the neighbourhood's minimum; None on a non-peak."""
    patch = acf[row - 1 : row + 2, col - 1 : col + 2]
    best = np.unravel_index(int(np.argmax(patch)), patch.shape)
    row, col = row - 1 + best[0], col - 1 + best[1]
    patch = acf[row - 1 : row + 2, col - 1 : col + 2]
    if patch.shape != (3, 3) or patch[1, 1] <= 0:
        return None
    weights = patch - patch.min()
    total = float(weights.sum())
    if total <= 0:
        return None
    offsets = np.array([-1.0, 0.0, 1.0])
    return np.array([row + float(weights.sum(axis=1) @ offsets) / total,
                     col + float(weights.sum(axis=0) @ offsets) / total])


def _to_embedding_grid(y: np.ndarray, transform: np.ndarray) -> np.ndarray:
    """Resample ``y`` so that the observed tile lattice becomes TILE-pixel, axis-aligned again."""
    height, width = y.shape
    scale = float(np.sqrt(abs(np.linalg.det(transform))))
    # keep the whole input unless that exceeds the sync window: bounded time for tiny lattice guesses
    out_h = int(min(height / scale, max(height, _SYNC_WINDOW)))
    out_w = int(min(width / scale, max(width, _SYNC_WINDOW)))
    centre_in, centre_out = np.array([width / 2, height / 2]), np.array([out_w / 2, out_h / 2])
    matrix = np.hstack([transform, (centre_in - transform @ centre_out)[:, None]])
    return cv2.warpAffine(y, matrix, (out_w, out_h), flags=cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP)


def _read_refined(window: np.ndarray, transform: np.ndarray, score: float) -> int | None:
    """Finish a lattice guess whose pilot shows but does not read: a guess a few tenths of a
    percent off drifts the tile by a pixel or more across the image and blurs the fold. Each
    axis's scale is nudged in turn, keeping the nudge that raises the pilot most."""
    factors = [1.0, 1.0]
    for axis in (0, 1):  # x, then y
        best_step = 0.0
        for step in _REFINE_STEPS:
            trial = list(factors)
            trial[axis] += step
            mark_id, trial_score = _read_with_score(_to_embedding_grid(window, transform @ np.diag(trial)))
            if mark_id is not None:
                return mark_id
            if trial_score > score:
                score, best_step = trial_score, step
        factors[axis] += best_step
    return None
