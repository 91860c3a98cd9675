"""The video watermark on luminance planes: the image mark's carrier, computed once per frame size.

Pure numpy/OpenCV (no Django, no PyAV); media_codecs/video/marking.py decodes and re-encodes around it.

Design
------
* Payload and carrier are the image watermark's first layer (media_codecs/image/watermark/): the 64-bit
  id plus CRC-24, convolutionally coded, carried by a keyed ``TILE`` x ``TILE`` DFT-domain pattern with a
  pilot for synchronisation. The second (canonical-copy) layer is left out: its quantisation would have
  to be aimed frame by frame, which is what makes marking slow, and video reads gain far more SNR from
  averaging frames than from it.
* The carrier lives on a *grid*: the frame resized so its short side is ``GRID_SIDE`` pixels (frames
  smaller than that keep their size). A 1080p frame carries a tile of 384 pixels, so the mark sits at
  periods of 12 to 48 pixels, which H.264/H.265/VP9 at ordinary rates keep; a copy scaled to 720p or
  480p is resized back to the same grid by the reader, so uniform scaling costs nothing to undo.
* The mark id is the same in every frame, so the tile, tiled over the grid and resized to the frame
  (``FrameMarker``), is computed once per frame size. Per frame only the texture-masking gain is
  measured, on the grid-sized copy of the frame (a few hundred thousand pixels whatever the frame
  size), then resized and multiplied into the carrier: about 0.6 level RMS on flat areas, more in
  texture, faded near black and white, never over the image mark's RMS budget. Every frame is marked:
  a cadence (one frame in N) would make the mark flicker and leave trims with fewer marked frames.
* Reading (``MarkReader``): each frame read is resized to the grid and averaged with the others. The
  pattern is identical (up to its gain) in every frame while the picture moves, so the average keeps the
  mark and blurs the host; the image reader then reads the average: whitening, folding modulo the tile
  (any crop or translation becomes a cyclic shift), the pilot's shift, the four flips, and when that
  fails the lattice search that undoes a scale change (a crop resized to the full frame, or a copy
  smaller than the grid). Accepted only if the pilot, CRC-24 and codeword checks all pass: never a
  wrong id.

Figures (recovery per attack, PSNR, time): bench/video_watermark.py and docs/performance.md.
"""

from __future__ import annotations

import cv2
import numpy as np

from media_codecs import ecc
from media_codecs.ecc import MARK_BITS
from media_codecs.image.watermark import MIN_READ_SIDE, MIN_SIDE, TILE, extract_luma
from media_codecs.image.watermark.embedding import _WHITEN_SIGMA, _block_means, _masking_gain, _tile_pattern

GRID_SIDE = 360  # short side of the grid the carrier is defined on (pixels of the frame's resized copy)
MIN_FRAME_SIDE = MIN_SIDE  # frames with a shorter side cannot carry the mark
_GRID_BLOCK = 4  # the masking gain is measured on 4x4 blocks of the grid (the image mark's _GRID)


class WatermarkError(Exception):
    """The frames cannot carry the mark (too small) or the id does not fit in 64 bits."""


def grid_size(height: int, width: int) -> tuple[int, int]:
    """(height, width) of the grid for a frame: short side ``GRID_SIDE`` (or the frame's own, if
    smaller), the frame's aspect kept."""
    short = min(height, width)
    scale = min(1.0, GRID_SIDE / short)
    return max(1, round(height * scale)), max(1, round(width * scale))


class FrameMarker:
    """Adds the mark for one id to frames of one size; the carrier is made once, in the constructor."""

    def __init__(self, height: int, width: int, mark_id: int):
        if min(height, width) < MIN_FRAME_SIDE:
            raise WatermarkError(f"frames of {width}x{height} are under {MIN_FRAME_SIDE} pixels on a side")
        if not 0 <= mark_id < 1 << MARK_BITS:
            raise WatermarkError("mark_id must be an unsigned 64-bit integer")
        self.height, self.width = height, width
        self.grid = grid_size(height, width)
        tile = _tile_pattern(ecc.conv_encode(ecc.payload_bits(mark_id)))
        grid_h, grid_w = self.grid
        tiled = np.tile(tile, (-(-grid_h // TILE), -(-grid_w // TILE)))[:grid_h, :grid_w]
        self.carrier = _resized(tiled, height, width)

    def delta(self, luma: np.ndarray) -> np.ndarray:
        """The mark to add to one frame's luminance (uint8 or float, height x width), as float32."""
        gain = _grid_gain(_resized(np.asarray(luma, dtype=np.float32), *self.grid))
        return cv2.multiply(self.carrier, _resized(gain, self.height, self.width))

    def mark(self, luma: np.ndarray) -> np.ndarray:
        """The 8-bit luminance plane carrying the mark (rounded and saturated)."""
        luma = np.ascontiguousarray(luma, dtype=np.uint8)
        return cv2.add(luma.astype(np.float32), self.delta(luma), dtype=cv2.CV_8U)


def _grid_gain(grid_luma: np.ndarray) -> np.ndarray:
    """The image mark's texture-masking gain, measured on the grid copy (a quarter of its size)."""
    residual = grid_luma - cv2.GaussianBlur(grid_luma, (0, 0), _WHITEN_SIGMA)
    return _masking_gain(_block_means(residual * residual), _block_means(grid_luma))


def _resized(plane: np.ndarray, height: int, width: int) -> np.ndarray:
    """``plane`` resized to height x width: area means when shrinking, bilinear when growing."""
    if plane.shape == (height, width):
        return plane
    shrinking = height * width < plane.shape[0] * plane.shape[1]
    method = cv2.INTER_AREA if shrinking else cv2.INTER_LINEAR
    return cv2.resize(plane, (width, height), interpolation=method)


class MarkReader:
    """Averages frames (luminance planes of one size) on the grid, then reads the mark from the average."""

    def __init__(self) -> None:
        self.total: np.ndarray | None = None
        self.count = 0

    def add(self, luma: np.ndarray) -> None:
        """Add one frame's luminance; frames of another size than the first are ignored."""
        if min(luma.shape) < MIN_READ_SIDE:
            return
        grid = _resized(np.asarray(luma, dtype=np.float32), *grid_size(*luma.shape))
        if self.total is None:
            self.total = np.zeros_like(grid, dtype=np.float64)
        if grid.shape == self.total.shape:
            self.total += grid
            self.count += 1

    def read(self) -> int | None:
        """The id carried by the frames added so far, or None (no frame, or no mark passes the checks)."""
        if self.total is None or not self.count:
            return None
        return extract_luma((self.total / self.count).astype(np.float32))
