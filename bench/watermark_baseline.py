"""FROZEN for bench/watermark.py only: media_codecs/image/watermark.py as of 90aa24d, before issue 19.

Invisible, robust 64-bit watermark for an image's luminance plane.

Pure numpy/OpenCV (no Django), deterministic: the key is the fixed seed below.

Design
------
* Payload: the 64-bit id plus a CRC-24 (88 bits), convolutionally coded (K=7, rate 1/3,
  zero-terminated: 282 coded bits) and soft-decoded with Viterbi.
* Carrier: one ``TILE`` x ``TILE`` pattern defined in its own 2-D DFT domain. A keyed
  random set of mid-frequency bins carries a known *pilot* (synchronisation) and the
  coded bits (BPSK on keyed random phases, ``_BINS_PER_BIT`` bins each). The pattern is
  repeated over the whole image and added to the luminance at a fixed RMS (PSNR ~40.5 dB
  whatever the image), spread by a texture-masking gain of mean square 1 so flat areas get
  less of it. DFT rather than block-DCT bins because a cyclic shift of the tile only turns
  their phases, which is what makes crops and translations cheap to resynchronise.
* Reading: the luminance is whitened (local mean removed, each pixel weighted by the inverse
  of its local residual power, outliers clipped) and folded
  modulo the tile, so a crop only shifts the tile cyclically; an FFT correlation with the
  pilot finds that shift, then each coded bit is read from its bins. Scaling and rotation
  are undone first when the plain read fails: the tiling makes the autocorrelation of the
  whitened image peak on the (scaled, rotated) tile lattice, which gives the transform.
* A read is accepted only if the pilot peak is significant, the CRC matches and the soft
  values agree with the re-encoded codeword: otherwise ``None``, never a wrong id.

Minimum size: ``embed_luma`` needs at least ``MIN_SIDE`` (128) pixels on each side;
``extract_luma`` returns ``None`` below ``MIN_READ_SIDE`` (64).
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
_MARK_RMS = 2.4  # luminance units: RMS 2.4 -> PSNR ~40.4 dB after the RGB round trip
_BAND = (8.0, 32.0)  # radii in tile-DFT bins (cycles per tile): mid frequencies survive JPEG/resize
_BINS_PER_BIT = 2
_PILOT_ENERGY = 0.25  # share of the mark energy given to the synchronisation pilot
_WHITEN_SIGMA = 2.0  # Gaussian removed from the luminance before reading: the host's low frequencies
_LOCAL_POWER_SIGMA = 3.0  # neighbourhood over which host noise power is estimated
_POWER_FLOOR = 4.0  # keeps flat areas from being amplified without bound
_CLIP_SIGMAS = 7.5  # weighted residual clipped at this many mean absolute values (edges)
_MASK_FLOOR = 3.0  # luminance units: how far flat areas keep some mark
_MASK_EXPONENT = 0.75  # 0: no masking; 1: mark proportional to local activity
_HEADROOM, _HEADROOM_MIN_GAIN = 8.0, 0.2  # fade the mark within 8 levels of black/white
READ_WINDOW = 2048  # reads look at most at this centred window (bounded time on huge images)
_SYNC_WINDOW = 1024  # window for the (slower) scale/rotation search
_EMBED_BAND = 4 * TILE  # rows embedded at a time: bounded memory on large images
_GRID = 4  # the masking gain is measured on 4x4 blocks
_BLUR_MARGIN = 8  # rows OpenCV's Gaussian of sigma 2 reaches (kernel size 17)
_SCALE_RANGE = (0.45, 1.6)  # scalings the lattice search considers (square lattice: no shear)

_CODED_BITS = ecc.CODED_BITS

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
    luminance is read once, band by band, for the masking gain before the first band is
    yielded, so a caller may change its pixels while iterating; no full-size float plane is
    ever held. Raises WatermarkError as ``embed_luma`` does.
    """
    height, width = shape[:2]
    if min(height, width) < MIN_SIDE:
        raise WatermarkError(f"need a 2-D luminance plane of at least {MIN_SIDE}x{MIN_SIDE}, got {shape}")
    if not 0 <= mark_id < 1 << MARK_BITS:
        raise WatermarkError("mark_id must be an unsigned 64-bit integer")
    tile = _tile_pattern(ecc.conv_encode(ecc.payload_bits(mark_id)))
    gain_grid = _masking_gain_grid(luma_rows, height, width)
    tile_rows = np.tile(tile, (_EMBED_BAND // TILE, -(-width // TILE)))[:, :width]
    for top in range(0, height, _EMBED_BAND):
        bottom = min(height, top + _EMBED_BAND)
        yield top, tile_rows[: bottom - top] * _gain_rows(gain_grid, height, width, top, bottom)


def _masking_gain_grid(luma_rows: Callable[[int, int], np.ndarray], height: int, width: int) -> np.ndarray:
    """Per-pixel mark gain on a 4x coarser grid, with mean square 1 (so PSNR is unchanged): more
    mark in busy texture, where it is least visible, less on flat areas such as sky or skin."""
    # Local activity varies slowly, so it is measured on 4x4 block means, computed band by band
    # with enough rows around each band for the Gaussian to see what it would see on the whole plane.
    energy, mean_y = [], []
    for top in range(0, height - height % _GRID, _EMBED_BAND):
        bottom = min(height - height % _GRID, top + _EMBED_BAND)
        first, last = max(0, top - _BLUR_MARGIN), min(height, bottom + _BLUR_MARGIN)
        y = np.ascontiguousarray(luma_rows(first, last), dtype=np.float32)
        residual = (y - cv2.GaussianBlur(y, (0, 0), _WHITEN_SIGMA))[top - first : bottom - first]
        energy.append(_block_means(residual * residual))
        mean_y.append(_block_means(y[top - first : bottom - first]))
    small, small_y = np.concatenate(energy), np.concatenate(mean_y)
    activity = cv2.sqrt(cv2.GaussianBlur(small, (0, 0), _LOCAL_POWER_SIGMA / 2))
    gain = cv2.pow(activity + _MASK_FLOOR, _MASK_EXPONENT)
    # near black or white half the mark is clipped away and the rest is pure distortion
    headroom = np.minimum(small_y, 255.0 - small_y)
    gain *= np.clip(headroom / _HEADROOM, _HEADROOM_MIN_GAIN, 1.0)
    gain *= 1.0 / np.sqrt(float(np.mean(gain * gain)))
    return gain


def _block_means(rows: np.ndarray) -> np.ndarray:
    height, width = rows.shape[0] // _GRID * _GRID, rows.shape[1] // _GRID * _GRID
    blocks = rows[:height, :width].reshape(height // _GRID, _GRID, width // _GRID, _GRID)
    return blocks.mean(axis=(1, 3), dtype=np.float32)


def _gain_rows(grid: np.ndarray, height: int, width: int, top: int, bottom: int) -> np.ndarray:
    """Rows ``top..bottom`` of the grid bilinearly resized to ``height`` x ``width`` (OpenCV's
    INTER_LINEAR mapping: pixel centres aligned, edges clamped), without the full-size plane."""
    grid_height = grid.shape[0]
    source = (np.arange(top, bottom) + 0.5) * (grid_height / height) - 0.5
    below = np.floor(source).astype(np.int64)
    weight = (source - below).astype(np.float32)[:, None]
    upper, lower = grid[np.clip(below, 0, grid_height - 1)], grid[np.clip(below + 1, 0, grid_height - 1)]
    rows = upper * (1 - weight) + lower * weight
    return cv2.resize(rows, (width, bottom - top), interpolation=cv2.INTER_LINEAR)


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
    residual = y - cv2.GaussianBlur(y, (0, 0), _WHITEN_SIGMA)
    local_power = cv2.GaussianBlur(residual * residual, (0, 0), _LOCAL_POWER_SIGMA)
    weighted = residual / (local_power + _POWER_FLOOR)
    limit = _CLIP_SIGMAS * float(np.mean(np.abs(weighted))) + 1e-6
    return np.clip(weighted, -limit, limit)


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


def _soft_bits(spectrum: np.ndarray, shift: tuple[float, float]) -> np.ndarray:
    lay = _layout()
    n_message = lay.n_message
    rows, cols = lay.rows[:n_message], lay.cols[:n_message]
    ky = np.where(rows > TILE // 2, rows - TILE, rows)
    undo_shift = np.exp(2j * np.pi * (ky * shift[0] + cols * shift[1]) / TILE)
    values = np.real(spectrum[rows, cols] * undo_shift * np.conj(lay.phases[:n_message]))
    return np.bincount(lay.bit_of_bin, weights=values, minlength=_CODED_BITS)


def _decode(soft: np.ndarray) -> int | None:
    return ecc.decode(soft, _MIN_CODEWORD_AGREEMENT)[0]


def _read_aligned(y: np.ndarray) -> tuple[int | None, float]:
    """Read a mark whose tiles are axis-aligned at the embedding scale (any translation)."""
    spectrum = _flat_spectrum(_fold(_whiten(y)))
    dy, dx, score = _find_shift(spectrum)
    if score < _MIN_PILOT_SCORE:
        return None, score
    return _decode(_soft_bits(spectrum, (dy, dx))), score


def _autocorrelation(y: np.ndarray, max_lag: int) -> np.ndarray:
    """Per-overlap autocorrelation of the whitened image for lags up to ``max_lag``
    (array of side 2 * max_lag + 1, zero lag at the centre)."""
    residual = _whiten(y)
    height, width = residual.shape
    # padding by max_lag keeps those lags linear (no wrap-around)
    size_y = cv2.getOptimalDFTSize(max(height, max_lag + 1) + max_lag)
    size_x = cv2.getOptimalDFTSize(max(width, max_lag + 1) + max_lag)
    padded = np.zeros((size_y, size_x), dtype=np.float32)
    padded[:height, :width] = residual
    spectrum = cv2.dft(padded, flags=cv2.DFT_COMPLEX_OUTPUT)
    # magnitude instead of power: a sharper autocorrelation, less dominated by strong edges
    magnitude = np.zeros_like(spectrum)
    magnitude[..., 0] = cv2.magnitude(spectrum[..., 0], spectrum[..., 1])
    acf = cv2.idft(magnitude, flags=cv2.DFT_REAL_OUTPUT | cv2.DFT_SCALE)
    acf = np.roll(acf, (max_lag, max_lag), axis=(0, 1))[: 2 * max_lag + 1, : 2 * max_lag + 1]
    lags = np.abs(np.arange(-max_lag, max_lag + 1))
    overlap = np.outer(height - lags, width - lags).astype(np.float32)
    return acf / np.maximum(overlap, 0.05 * height * width)


def _lattice_candidates(y: np.ndarray, count: int = 6) -> list[np.ndarray]:
    """Likely 2x2 maps (columns: observed tile x/y vectors) from autocorrelation peaks.

    A peak is scored with the peaks its square lattice implies (the vector turned 90° and
    both diagonals), which tells the tiling apart from the image's own repetitive texture.
    """
    longest = min(_SCALE_RANGE[1] * TILE, 0.75 * min(y.shape))
    max_lag = int(np.ceil(longest * np.sqrt(2))) + 2  # room for the diagonals
    acf = _autocorrelation(y, max_lag)
    lag_y, lag_x = np.mgrid[-max_lag : max_lag + 1, -max_lag : max_lag + 1]
    lag = np.hypot(lag_y, lag_x)
    allowed = (lag >= _SCALE_RANGE[0] * TILE) & (lag <= longest) & (lag_x > 0) & (np.abs(lag_y) <= lag_x)
    local_max = acf >= cv2.dilate(acf, np.ones((5, 5), np.uint8))
    ys, xs = np.nonzero(allowed & local_max)
    vy, vx = ys - max_lag, xs - max_lag
    near_max = cv2.dilate(acf, np.ones((3, 3), np.uint8))  # tolerate a pixel of lattice distortion
    score = acf[ys, xs].copy()
    for py, px in ((vx, -vy), (vy + vx, vx - vy), (vy - vx, vx + vy)):
        score += near_max[np.clip(py + max_lag, 0, 2 * max_lag), np.clip(px + max_lag, 0, 2 * max_lag)]
    maps = []
    for best in np.argsort(score)[::-1][:count]:
        py, px = ys[best], xs[best]
        ux, uy = _subpixel(acf[py, :], px) - max_lag, _subpixel(acf[:, px], py) - max_lag
        maps.append(np.array([[ux, -uy], [uy, ux]]) / TILE)  # y tile vector = x vector turned 90°
    return maps


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
    mark_id, _ = _read_aligned(_centre_window(y, READ_WINDOW))
    if mark_id is not None:
        return mark_id
    window = _centre_window(y, _SYNC_WINDOW)
    for transform in _lattice_candidates(window):
        if np.allclose(transform, np.eye(2), atol=2e-3):
            continue  # the aligned read above already covered this
        mark_id, _ = _read_aligned(_to_embedding_grid(window, transform))
        if mark_id is not None:
            return mark_id
    return None
