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

Modules: ``layout`` (which bins and coefficients carry what), ``embedding`` (the first layer and its
masking gain), ``canonical`` (the second layer), ``reading`` (whitening, folding, the pilot, soft bits,
decoding) and ``lattice`` (the search for a scale, rotation or aspect change); the entry points are here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np

from media_codecs import ecc
from media_codecs.ecc import MARK_BITS
from media_codecs.image.watermark.canonical import (
    _FIRST_LAYER_SHARE_SIDE,
    _WHOLE_PLANE_PIXELS,
    _canon_change,
    _read_canonical,
)
from media_codecs.image.watermark.canonical import _QIM_STEP as _QIM_STEP
from media_codecs.image.watermark.canonical import _apply_round_trip as _apply_round_trip
from media_codecs.image.watermark.canonical import _area_matrix as _area_matrix
from media_codecs.image.watermark.canonical import _canon_projections as _canon_projections
from media_codecs.image.watermark.canonical import _linear_matrix as _linear_matrix
from media_codecs.image.watermark.canonical import _round_trip as _round_trip
from media_codecs.image.watermark.embedding import _EMBED_BAND, _host_measures, _resized_rows, _tile_pattern
from media_codecs.image.watermark.embedding import _GRID as _GRID
from media_codecs.image.watermark.embedding import _block_means as _block_means
from media_codecs.image.watermark.lattice import (
    _REFINE_MIN_SCORE,
    _SYNC_WINDOW,
    _lattice_candidates,
    _read_refined,
    _to_embedding_grid,
)
from media_codecs.image.watermark.layout import CANON as CANON
from media_codecs.image.watermark.layout import TILE
from media_codecs.image.watermark.layout import _canon_layout as _canon_layout
from media_codecs.image.watermark.reading import _centre_window, _fold, _read_folded, _read_with_score, _whiten

# The interface other modules use; the private names imported "as" themselves above are the pieces the
# tests check one by one, importable from here as they were from the single module.
__all__ = ["MARK_BITS", "MIN_READ_SIDE", "MIN_SIDE", "READ_WINDOW", "TILE", "WatermarkError", "embed_bands",
           "embed_luma", "extract_luma"]

MIN_SIDE = 128
MIN_READ_SIDE = 64
READ_WINDOW = 2048  # reads look at most at this centred window (bounded time on huge images)


class WatermarkError(Exception):
    """The image cannot carry the mark (e.g. smaller than ``MIN_SIDE`` on one side)."""


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
    # the package's setting, read when called: a test lowers it to compare the band-by-band copy
    gain_grid, host_copy = _host_measures(luma_rows, height, width, _WHOLE_PLANE_PIXELS)
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
    # copy's mark (docs/performance.md, "Figures behind code comments").
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
