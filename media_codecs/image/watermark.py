"""Invisible, robust 64-bit watermark for an image's luminance plane.

Pure numpy/OpenCV (no Django), deterministic: the key is the fixed seed below.

Design
------
* Payload: the 64-bit id plus a CRC-24 (88 bits), convolutionally coded (K=7, rate 1/3,
  zero-terminated: 282 coded bits) and soft-decoded with Viterbi.
* Carrier: one ``TILE`` x ``TILE`` pattern defined in its own 2-D DFT domain. A keyed
  random set of mid-frequency bins carries a known *pilot* (synchronisation) and the
  coded bits (BPSK on keyed random phases, ``_BINS_PER_BIT`` bins each). The pattern is
  repeated over the whole image and added to the luminance, scaled by an absolute
  texture-masking gain: about 0.6 level RMS on a flat area (sky, walls, gradients), more in
  texture, and the whole scaled down only past an RMS of 1.69 (PSNR ~43.1 dB with both layers). DFT rather
  than block-DCT bins because a cyclic shift of the tile only turns their phases, which is
  what makes crops and translations cheap to resynchronise.
* Reading: the luminance is whitened (local mean removed, each pixel weighted by the inverse
  of its local residual power, outliers clipped) and folded modulo the tile, so a crop only
  shifts the tile cyclically; an FFT correlation with the pilot finds that shift, then each
  coded bit is read from its bins, weighted by the SNR the pilot shows in its frequency band.
  A mirrored copy folds to the mirrored tile, so the four flips of the folded tile are tried.
  Scaling, rotation and aspect-ratio changes are undone first when the plain read fails: the
  tiling makes the autocorrelation of the whitened image peak on the (affinely distorted)
  tile lattice, whose two basis vectors give the 2x2 transform.
* Second layer, for small copies: a copy scaled to a few hundred pixels takes the tile's band past
  what the resize and JPEG keep. The same coded bits are also carried by the canonical copy (the
  whole image area-resized to ``CANON`` x ``CANON``, whatever its size and aspect): each coded bit
  is a keyed unit-norm combination of low-mid DCT coefficients of that copy, and signing moves its
  value onto a dithered lattice (quantisation index modulation, a 0 and a 1 half a step apart). The
  change is made at the canonical size, shaped by the same masking gain, and resized to the
  image; a few passes aim it through the resampling round trip. A reader resizes any copy to the
  canonical size and reads each bit from where its value falls between the lattice points, so the
  host's own texture, which an additive mark must outshout in a copy this small, does not count.
  It is read after the aligned read and before the lattice search.
* A read is accepted only if the pilot peak is significant (first layer), the CRC matches and the
  soft values agree with the re-encoded codeword: otherwise ``None``, never a wrong id.

Minimum size: ``embed_luma`` needs at least ``MIN_SIDE`` (128) pixels on each side (``CANON``, 256,
for the second layer, which also leaves out images over ``_CANON_MAX_SIDE`` on a side);
``extract_luma`` returns ``None`` below ``MIN_READ_SIDE`` (64). A uniformly scaled copy reads down
to 75% of the signed size through the first layer and down to 256 pixels on its short side through
the second.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import lru_cache

import cv2
import numpy as np

from media_codecs import ecc
from media_codecs.ecc import MARK_BITS

TILE = 128
MIN_SIDE = 128
MIN_READ_SIDE = 64

_SEED = 0x5EC0_C0DE_2026
_MARK_RMS = 1.69  # luminance units: with the small-copy layer, PSNR ~43.1 dB after the RGB round trip
_BAND = (8.0, 32.0)  # radii in tile-DFT bins (cycles per tile): mid frequencies survive JPEG/resize
_BINS_PER_BIT = 2
_SNR_BAND_WIDTH, _SNR_BANDS = 4, 6  # radius bands (in tile-DFT bins) the reader weighs separately
_PILOT_ENERGY = 0.25  # share of the mark energy given to the synchronisation pilot
_WHITEN_SIGMA = 2.0  # Gaussian removed from the luminance before reading: the host's low frequencies
_LOCAL_POWER_SIGMA = 3.0  # neighbourhood over which host noise power is estimated
_POWER_FLOOR = 4.0  # keeps flat areas from being amplified without bound
_CLIP_SIGMAS = 7.5  # weighted residual clipped at this many mean absolute values (edges)
_MASK_FLOOR = 3.0  # luminance units: activity added before the exponent (flat areas keep some mark)
# the mark's local amplitude grows as (activity + _MASK_FLOOR) ** 3/4 (0 would be no masking, 1 a mark
# proportional to the activity)
_MATCHED = False
_FLAT_RMS = 0.6  # luminance units: the mark's RMS on a perfectly flat area (sky, walls, gradients)
_HEADROOM, _HEADROOM_MIN_GAIN = 8.0, 0.2  # fade the mark within 8 levels of black/white
READ_WINDOW = 2048  # reads look at most at this centred window (bounded time on huge images)
_SYNC_WINDOW = 1024  # window for the (slower) scale/rotation search
_EMBED_BAND = 4 * TILE  # rows embedded at a time: bounded memory on large images
_GRID = 4  # the masking gain is measured on 4x4 blocks
_BLUR_MARGIN = 8  # rows OpenCV's Gaussian of sigma 2 reaches (kernel size 17)
_SCALE_RANGE = (0.45, 1.6)  # tile-vector lengths the lattice search considers, in tiles
_ASPECT_RANGE = (0.7, 1.43)  # ratio of the two tile vectors' lengths (aspect-ratio changes to 0.8-1.25)
_MAX_SHEAR_COSINE = 0.3  # the tile vectors stay within ~17° of perpendicular
_PEAK_EMPHASIS, _PEAK_BOX = 1.0, 7
_REFINE_MIN_SCORE = 5.0  # pilot score (best of 4 flips) of a failed lattice guess worth refining
_REFINE_STEPS = (-0.01, -0.005, 0.005, 0.01)  # relative nudges of each axis's scale
_LATTICE_PEAKS = 32  # strongest autocorrelation peaks of each axis, paired with every peak of the other
_AXIS_PEAKS = 512  # at most this many peaks per axis (bounded time on busy images)
_LATTICE_POINTS = ((1, 0), (0, 1), (1, 1), (1, -1), (2, 0), (0, 2), (2, 1), (1, 2), (2, -1), (1, -2))

_CODED_BITS = ecc.CODED_BITS

# Second layer, for small copies: quantisation index modulation in a 256 x 256 copy of the whole image
CANON = 256  # side of the canonical copy (the whole image squeezed to a square, whatever its size)
# radii in indices of the canonical copy's 256 x 256 DCT: 0.06-0.16 cycles/pixel. Below, JPEG's block
# means (its DC errors) are the loudest noise; above, the resamplers disagree most (Lanczos, area, cubic).
_CANON_BAND = (32.0, 80.0)
_CANON_SEED = 0x51_2E_2026
_QIM_STEP = 22.0  # lattice step of a coded bit's projection: ~0.4 level RMS over the image
_CANON_MAX_SIDE = 16384  # the resampling matrices are CANON x side: 16 MB each at most
_FIRST_LAYER_SHARE_SIDE = 4 * CANON
_ROUND_TRIP_REACH = 2  # diagonals either side kept of the resampling round trip (it uses one)
_WHOLE_PLANE_PIXELS = 4_000_000  # the canonical copy is made from the whole plane up to 16 MB of float32
_QIM_PASSES = 3  # the resampling round trip and the masking are not the identity: re-aim twice more
_CANON_MIN_AGREEMENT = 0.70  # unmarked images reach at most 0.63 (2,000 tried), 256-px JPEG 75 copies 0.90

_MIN_PILOT_SCORE = 5.0  # pilot peak in standard deviations of the correlation; noise stays near 3.5-4.8
# Normalised correlation of the soft values with the decoded codeword. Viterbi on pure noise
# already reaches ~0.56 (max 0.61 in 2000 trials); a real read that decodes sits above ~0.75.
_MIN_CODEWORD_AGREEMENT = 0.65


class WatermarkError(Exception):
    """The image cannot carry the mark (e.g. smaller than ``MIN_SIDE`` on one side)."""


# ---------------------------------------------------------------- carrier layout


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


def embed_luma(y: np.ndarray, mark_id: int) -> np.ndarray:
    """Return ``y`` (float32 HxW luminance, 0..255) carrying the unsigned 64-bit ``mark_id``.

    Raises WatermarkError if the image is smaller than ``MIN_SIDE`` on a side or the id
    does not fit in 64 bits. The result is not clipped: the caller's conversion to pixels does it.
    """
    marked = np.array(y, dtype=np.float32, copy=True)
    for top, delta in embed_bands(lambda first, last: marked[first:last], marked.shape, mark_id):
        marked[top : top + len(delta)] += delta
    return marked


def embed_bands(luma_rows: Callable[[int, int], np.ndarray], shape: tuple[int, ...],
                mark_id: int) -> Iterator[tuple[int, np.ndarray]]:
    """Yield ``(top, delta)``: the mark to add to rows ``top..top+len(delta)`` of the luminance.

    ``luma_rows(first, last)`` returns those rows of the luminance (float32). The whole
    luminance is read once, band by band, for the masking gain and the canonical copy before the
    first band is yielded, so a caller may change its pixels while iterating. Past
    ``_WHOLE_PLANE_PIXELS`` no full-size float plane is ever held; up to it, the bands are kept for
    the canonical copy (16 MB of float32 at most). Raises WatermarkError as ``embed_luma`` does.
    """
    height, width = shape[:2]
    if min(height, width) < MIN_SIDE:
        raise WatermarkError(f"need a 2-D luminance plane of at least {MIN_SIDE}x{MIN_SIDE}, got {shape}")
    if not 0 <= mark_id < 1 << MARK_BITS:
        raise WatermarkError("mark_id must be an unsigned 64-bit integer")
    coded = ecc.conv_encode(ecc.payload_bits(mark_id))
    tile = _tile_pattern(coded)
    gain_grid, host_copy = _host_measures(luma_rows, height, width)
    tile_rows = np.tile(tile, (_EMBED_BAND // TILE, -(-width // TILE)))[:, :width]

    def first_layer(top: int, bottom: int) -> np.ndarray:
        return tile_rows[: bottom - top] * _resized_rows(gain_grid, height, width, top, bottom)

    small_copy, kept = None, {}
    if host_copy is not None:
        # the small-copy layer aims at the canonical copy of the image as it will be signed; the first
        # layer's share in it counts below 4x the canonical size (at 512 pixels it misses the lattice
        # by 0.06 step RMS without it, at 1024 by 0.008 against 0.006: not worth a second pass)
        if min(height, width) < _FIRST_LAYER_SHARE_SIDE:
            for top in range(0, height, _EMBED_BAND):
                band = first_layer(top, min(height, top + _EMBED_BAND))
                host_copy.add_layer(top, band)
                if host_copy.whole:
                    kept[top] = band  # small enough to keep rather than make again
        small_copy = _canon_change(host_copy.result(), coded, height, width, gain_grid)
    for top in range(0, height, _EMBED_BAND):
        bottom = min(height, top + _EMBED_BAND)
        delta = kept.pop(top) if top in kept else first_layer(top, bottom)
        if small_copy is not None:
            delta += _resized_rows(small_copy, height, width, top, bottom)
        yield top, delta


def _host_measures(luma_rows: Callable[[int, int], np.ndarray], height: int,
                   width: int) -> tuple[np.ndarray, _CanonicalCopy | None]:
    """One pass over the luminance, band by band: the masking gain grid and, on images of at least
    ``CANON`` pixels a side (and at most ``_CANON_MAX_SIDE``), the makings of the canonical copy (the
    whole image area-resized to ``CANON`` x ``CANON``)."""
    # Local activity varies slowly, so it is measured on 4x4 block means, computed band by band
    # with enough rows around each band for the Gaussian to see what it would see on the whole plane.
    energy, mean_y = [], []
    with_canonical = min(height, width) >= CANON and max(height, width) <= _CANON_MAX_SIDE
    host_copy = _CanonicalCopy(height, width) if with_canonical else None
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


# ---------------------------------------------------------------- small-copy layer


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

    def __init__(self, height: int, width: int):
        self.whole = height * width <= _WHOLE_PLANE_PIXELS
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


# ---------------------------------------------------------------- reading


def _centre_window(y: np.ndarray, size: int) -> np.ndarray:
    top = max(0, (y.shape[0] - size) // 2)
    left = max(0, (y.shape[1] - size) // 2)
    return y[top : top + size, left : left + size]


def _whiten(y: np.ndarray) -> np.ndarray:
    """Keep mostly mark: remove the image's low frequencies, then weight each pixel by the
    inverse of its local residual power (busy texture carries more host noise than mark),
    and clip what is left of strong edges."""
    y = np.ascontiguousarray(y, dtype=np.float32)
    residual = cv2.subtract(y, cv2.GaussianBlur(y, _kernel_size(_WHITEN_SIGMA), _WHITEN_SIGMA))
    local_power = cv2.GaussianBlur(cv2.multiply(residual, residual), _kernel_size(_LOCAL_POWER_SIGMA),
                                   _LOCAL_POWER_SIGMA)
    local_power += np.float32(_POWER_FLOOR)
    weighted = cv2.divide(residual, local_power)
    limit = _CLIP_SIGMAS * cv2.norm(weighted, cv2.NORM_L1) / max(weighted.size, 1) + 1e-6
    return np.clip(weighted, -limit, limit, out=weighted)


def _kernel_size(sigma: float) -> tuple[int, int]:
    """Gaussian kernels cut at 3 sigma (OpenCV's default for float images is 4): the blurs differ by
    at most 0.16 level, and the whitening of a read is 25% cheaper, which pays for the second layer's
    read of an unmarked image (CPU per 12 MP read: 243 ms with both, 238 before the second layer)."""
    side = 2 * int(np.ceil(3 * sigma)) + 1
    return side, side


def _fold(residual: np.ndarray) -> np.ndarray:
    """Sum the residual modulo the tile: a crop or translation becomes a cyclic shift."""
    height, width = residual.shape
    padded = np.zeros((-(-height // TILE) * TILE, -(-width // TILE) * TILE), dtype=np.float32)
    padded[:height, :width] = residual
    return padded.reshape(padded.shape[0] // TILE, TILE, padded.shape[1] // TILE, TILE).sum(axis=(0, 2))


def _flat_spectrum(folded: np.ndarray) -> np.ndarray:
    """Tile spectrum with every frequency ring scaled to unit power (host noise made white)."""
    spectrum = np.fft.rfft2(folded)
    ring = _layout().ring
    power = np.bincount(ring.ravel(), weights=np.abs(spectrum.ravel()) ** 2)
    counts = np.bincount(ring.ravel())
    return spectrum / np.sqrt(power / np.maximum(counts, 1) + 1e-12)[ring]


def _subpixel(values: np.ndarray, index: int) -> float:
    left, mid, right = values[index - 1], values[index], values[(index + 1) % len(values)]
    denom = left - 2 * mid + right
    return index + (0.5 * (left - right) / denom if denom < 0 else 0.0)


def _find_shift(spectrum: np.ndarray) -> tuple[float, float, float]:
    """Cyclic (dy, dx) of the pilot in the folded tile and the peak's significance."""
    lay = _layout()
    n_message = lay.n_message
    rows, cols = lay.rows[n_message:], lay.cols[n_message:]
    product = np.zeros_like(spectrum)
    product[rows, cols] = spectrum[rows, cols] * np.conj(lay.phases[n_message:])
    corr = np.fft.irfft2(product, s=(TILE, TILE))
    peak_y, peak_x = np.unravel_index(int(np.argmax(corr)), corr.shape)
    score = (corr[peak_y, peak_x] - corr.mean()) / (corr.std() + 1e-12)
    return _subpixel(corr[:, peak_x], peak_y), _subpixel(corr[peak_y, :], peak_x), float(score)


def _aligned_values(spectrum: np.ndarray, shift: tuple[float, float], part: slice) -> np.ndarray:
    """Real parts of the layout's bins ``part`` with the shift undone and the keyed phase removed:
    +amplitude for a pilot bin or a coded 1, -amplitude for a coded 0, plus host noise."""
    lay = _layout()
    rows, cols = lay.rows[part], lay.cols[part]
    ky = np.where(rows > TILE // 2, rows - TILE, rows)
    undo_shift = np.exp(2j * np.pi * (ky * shift[0] + cols * shift[1]) / TILE)
    return np.real(spectrum[rows, cols] * undo_shift * np.conj(lay.phases[part]))


def _soft_bits(spectrum: np.ndarray, shift: tuple[float, float]) -> np.ndarray:
    """Soft coded bits, each bin weighted by the signal-to-noise ratio the pilot shows at its
    frequency (maximal-ratio combining): after a downscale or a strong JPEG the upper frequencies
    are gone, and their bins would only add noise."""
    lay = _layout()
    n_message = lay.n_message
    pilot = _aligned_values(spectrum, shift, slice(n_message, None))
    band_of = np.minimum((lay.ring[lay.rows, lay.cols] - int(_BAND[0])) // _SNR_BAND_WIDTH, _SNR_BANDS - 1)
    pilot_band, message_band = band_of[n_message:], band_of[:n_message]
    counts = np.bincount(pilot_band, minlength=_SNR_BANDS)
    mean = np.bincount(pilot_band, weights=pilot, minlength=_SNR_BANDS) / np.maximum(counts, 1)
    power = np.bincount(pilot_band, weights=pilot * pilot, minlength=_SNR_BANDS) / np.maximum(counts, 1)
    variance = np.maximum(power - mean * mean, 1e-12)
    weight = np.maximum(mean, 0.0) / variance
    if not np.any(weight > 0):
        weight = np.ones(_SNR_BANDS)
    values = _aligned_values(spectrum, shift, slice(0, n_message)) * weight[message_band]
    return np.bincount(lay.bit_of_bin, weights=values, minlength=_CODED_BITS)


def _decode(soft: np.ndarray) -> int | None:
    return ecc.decode(soft, _MIN_CODEWORD_AGREEMENT)[0]


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


def extract_luma(y: np.ndarray) -> int | None:
    """Return the 64-bit id carried by luminance ``y`` (float HxW, 0..255), or None.

    None means no valid mark was found (unmarked, too damaged or too small); a mark that
    does not pass the pilot, CRC-24 and codeword checks is never reported.
    """
    if y.ndim != 2 or min(y.shape) < MIN_READ_SIDE:
        return None
    y = np.asarray(y, dtype=np.float32)
    # tiles axis-aligned at the embedding scale (any translation), as they are or mirrored
    residual = _whiten(_centre_window(y, READ_WINDOW))
    mark_id = _read_folded(_fold(residual))[0]
    if mark_id is not None:
        return mark_id
    # a uniformly scaled copy, however small, before the slower lattice search
    mark_id = _read_canonical(y)
    if mark_id is not None:
        return mark_id
    # The lattice search takes the centre of that residual (whitening is local). Each guess then
    # whitens its own resampled luminance: resampling the residual instead lost more of a small
    # copy's mark (copies at 50% and JPEG 75: 5/40 read against 11/40).
    window = _centre_window(y, _SYNC_WINDOW)
    refined = False
    for transform in _lattice_candidates(_centre_window(residual, _SYNC_WINDOW)):
        if np.allclose(transform, np.eye(2), atol=2e-3):
            continue  # the aligned read above already covered this
        mark_id, score = _read_with_score(_to_embedding_grid(window, transform))
        if mark_id is None and score >= _REFINE_MIN_SCORE and not refined:
            refined = True  # once per read: bounded time on unmarked images
            mark_id = _read_refined(window, transform, score)
        if mark_id is not None:
            return mark_id
    return None


def _read_with_score(grid: np.ndarray) -> tuple[int | None, float]:
    """The id in a luminance ``grid`` whose tiles are axis-aligned at the embedding scale, and the
    best pilot score of the four flips."""
    return _read_folded(_fold(_whiten(grid)))


def _read_folded(folded: np.ndarray) -> tuple[int | None, float]:
    """The id in a folded tile or one of its four flips (None if none passes the pilot, CRC and
    codeword checks), and the best pilot score of the four. A flip of the image is a flip of the
    folded tile (up to a cyclic shift, which the pilot search absorbs), so the four mirror images
    cost one fold and four tile FFTs."""
    best = 0.0
    for flipped in (folded, folded[:, ::-1], folded[::-1], folded[::-1, ::-1]):
        spectrum = _flat_spectrum(flipped)
        dy, dx, score = _find_shift(spectrum)
        best = max(best, score)
        if score >= _MIN_PILOT_SCORE:
            mark_id = _decode(_soft_bits(spectrum, (dy, dx)))
            if mark_id is not None:
                return mark_id, best
    return None, best


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
