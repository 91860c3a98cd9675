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
  smaller than that keep their size). A 1080p frame carries a tile of 576 pixels, so the mark sits at
  periods of 18 to 72 pixels, which H.264/H.265/VP9 at ordinary rates keep (a 360 grid lost the mark of
  smooth 360p clips to CRF 28); a copy scaled to 720p or 480p is resized back to the same grid by the
  reader, so uniform scaling costs nothing to undo.
* The mark id is the same in every frame, so the tile, tiled over the grid and resized to the frame
  (``FrameMarker``), is computed once per frame size. Per frame only the texture-masking gain is
  measured, on the grid-sized copy of the frame (a few hundred thousand pixels whatever the frame
  size), then resized and multiplied into the carrier: twice the image mark's gain (``GAIN_BOOST``), so
  about 1.2 levels RMS on flat areas and more in texture, faded near black and white, and at most 1.44
  levels RMS over the frame (0.85 of the image mark's budget: PSNR 45 dB before the re-encode, which
  costs about 2.5 dB more). Every frame is marked:
  a cadence (one frame in N) would make the mark flicker and leave trims with fewer marked frames.
* The re-encode (marking.py) puts a keyframe at least every 2 seconds. Between keyframes an encoder's
  motion compensation drags the mark along with the picture (a pan moves it with the pan) and lets it
  fade; a keyframe carries it whole, so any 2 seconds hold at least one fully marked frame.
* Reading (``MarkReader``): each frame read is resized to the grid, whitened and folded modulo the
  tile (any crop or translation becomes a cyclic shift), as the image reader does. The folded tiles are
  summed as they are (a still camera: the host averages out, the mark adds up), then, failing that,
  each moved back by its own pilot shift before the sum (the dragged mark of a pan), then read one by
  one; each sum is read for the four flips. All this once per ``CROP_RATIOS`` hypothesis (a 10% crop
  kept at its pixel size is not a uniform scale), then the image reader's lattice search on the
  frames' average and on the first frame for any other scale. Accepted only if the pilot, CRC-24 and
  codeword checks all pass: never a wrong id.

Figures (recovery per attack, PSNR, time): bench/video_watermark.py and docs/performance.md.
"""

from __future__ import annotations

import cv2
import numpy as np

from media_codecs import ecc
from media_codecs.ecc import MARK_BITS
from media_codecs.image.watermark import MIN_READ_SIDE, MIN_SIDE, TILE, extract_luma
from media_codecs.image.watermark.embedding import _WHITEN_SIGMA, _block_means, _masking_gain, _tile_pattern
from media_codecs.image.watermark.reading import _find_shift, _flat_spectrum, _fold, _read_folded, _whiten

GRID_SIDE = 240  # short side of the grid the carrier is defined on (pixels of the frame's resized copy)
# The image mark's gain doubled, within the same RMS budget: 1.2 levels RMS on flat areas instead of 0.6. At
# 0.6 an H.264 CRF 28 copy of a flat, dark or fading 360p clip lost the mark; at 1.5x the dark and fading
# clips still did not survive a scale to 240 lines (bench/video_watermark.py).
GAIN_BOOST = 2.0
# The whole frame's mark RMS at most 0.85 of the image mark's budget (1.44 levels): the re-encode's own
# divergence (the encoder decides differently around the mark) costs about 2.5 dB more, and at the full
# budget marked 1080p clips came out at 41.4-41.7 dB against the same re-encode unmarked.
_MAX_GAIN_RMS = 0.85
CROP_RATIOS = (1.0, 0.9)  # what a reader assumes of a copy's short side against the signed clip's
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
        """The mark to add to one frame's luminance (uint8, height x width), as float32."""
        gain = _grid_gain(_quick_grid_copy(luma, self.grid))
        return cv2.multiply(self.carrier, _resized(gain, self.height, self.width))

    def mark(self, luma: np.ndarray) -> np.ndarray:
        """The 8-bit luminance plane carrying the mark (rounded and saturated)."""
        luma = np.ascontiguousarray(luma, dtype=np.uint8)
        return cv2.add(luma, np.rint(self.delta(luma)).astype(np.int16), dtype=cv2.CV_8U)


def _quick_grid_copy(luma: np.ndarray, grid: tuple[int, int]) -> np.ndarray:
    """The frame on the grid for its masking gain, as float32: block means over a whole factor first (OpenCV's
    fast path), then bilinear to the grid; a quarter of the time of one area resize by 4.5 on 1080p."""
    factor = min(luma.shape[0] // grid[0], luma.shape[1] // grid[1])
    if factor >= 2:
        height, width = luma.shape[0] // factor, luma.shape[1] // factor
        luma = cv2.resize(luma[: height * factor, : width * factor], (width, height), interpolation=cv2.INTER_AREA)
    return cv2.resize(luma, (grid[1], grid[0]), interpolation=cv2.INTER_LINEAR).astype(np.float32)


def _grid_gain(grid_luma: np.ndarray) -> np.ndarray:
    """The image mark's texture-masking gain, measured on the grid copy (a quarter of its size)."""
    residual = grid_luma - cv2.GaussianBlur(grid_luma, (0, 0), _WHITEN_SIGMA)
    gain = _masking_gain(_block_means(residual * residual), _block_means(grid_luma)) * np.float32(GAIN_BOOST)
    mean_square = float(np.mean(gain * gain))
    limit = _MAX_GAIN_RMS * _MAX_GAIN_RMS
    return gain * np.float32(_MAX_GAIN_RMS / np.sqrt(mean_square)) if mean_square > limit else gain


def _resized(plane: np.ndarray, height: int, width: int) -> np.ndarray:
    """``plane`` resized to height x width: area means when shrinking, bilinear when growing."""
    if plane.shape == (height, width):
        return plane
    shrinking = height * width < plane.shape[0] * plane.shape[1]
    method = cv2.INTER_AREA if shrinking else cv2.INTER_LINEAR
    return cv2.resize(plane, (width, height), interpolation=method)


class MarkReader:
    """Collects frames (luminance planes of one size) on the grid, then reads the mark from all of them.

    Each frame goes on the grid once per hypothesis of ``CROP_RATIOS``: the copy's short side is that share of
    the signed clip's (1: the whole picture, scaled or not; 0.9: a 10% crop kept at its pixel size)."""

    def __init__(self) -> None:
        self.hypotheses = [_Hypothesis(ratio) for ratio in CROP_RATIOS]
        self.first: np.ndarray | None = None

    def add(self, luma: np.ndarray) -> None:
        """Add one frame's luminance; frames of another size than the first are ignored."""
        if min(luma.shape) < MIN_READ_SIDE:
            return
        luma = np.asarray(luma, dtype=np.float32)
        if self.first is None:
            self.first = luma
        elif luma.shape != self.first.shape:
            return
        for hypothesis in self.hypotheses:
            hypothesis.add(luma)

    def read(self) -> int | None:
        """The id carried by the frames added so far, or None (no frame, or no mark passes the checks).

        Each hypothesis in turn, then the image reader's lattice search (a scale no hypothesis names) on the
        average of the frames and on the first frame alone (a keyframe: the sharpest mark)."""
        if self.first is None:
            return None
        for hypothesis in self.hypotheses:
            mark_id = hypothesis.read()
            if mark_id is not None:
                return mark_id
        whole = self.hypotheses[0]
        mark_id = extract_luma((whole.total / len(whole.folds)).astype(np.float32))
        if mark_id is None and len(whole.folds) > 1:
            mark_id = extract_luma(_resized(self.first, *whole.total.shape))
        return mark_id


class _Hypothesis:
    """The frames' folded tiles and their sum on the grid, for a copy whose short side is ``ratio`` of the
    signed clip's."""

    def __init__(self, ratio: float):
        self.ratio = ratio
        self.total: np.ndarray | None = None
        self.folds: list[np.ndarray] = []

    def add(self, luma: np.ndarray) -> None:
        height, width = luma.shape
        scale = min(1.0, GRID_SIDE * self.ratio / min(height, width))
        grid = _resized(luma, max(1, round(height * scale)), max(1, round(width * scale)))
        if self.total is None:
            self.total = np.zeros_like(grid, dtype=np.float64)
        self.total += grid
        self.folds.append(_fold(_whiten(grid)))

    def read(self) -> int | None:
        """In order, cheapest and most likely first: the folded tiles summed as they are (a still camera),
        summed after undoing each frame's own pilot shift (a pan: the encoder's motion compensation drags
        the mark along with the picture until the next keyframe), then the best frames one by one."""
        if not self.folds:
            return None
        mark_id, _ = _read_folded(np.sum(self.folds, axis=0))
        if mark_id is not None:
            return mark_id
        for flip in _FLIPS:
            mark_id = _read_aligned([flip(fold) for fold in self.folds])
            if mark_id is not None:
                return mark_id
        strongest = sorted(self.folds, key=lambda fold: -_pilot(fold)[1])
        for fold in strongest[:_SINGLE_READS]:
            mark_id, _ = _read_folded(fold)
            if mark_id is not None:
                return mark_id
        return None


_FLIPS = (lambda tile: tile, lambda tile: tile[:, ::-1], lambda tile: tile[::-1], lambda tile: tile[::-1, ::-1])
_ALIGN_MIN_SCORE = 4.0  # a frame's pilot below this gives no shift worth aligning on (noise peaks reach ~4.8)
_SINGLE_READS = 4  # frames read one by one, the strongest pilots first


def _pilot(fold: np.ndarray) -> tuple[tuple[float, float], float]:
    """The pilot's cyclic shift in a folded tile and its significance."""
    dy, dx, score = _find_shift(_flat_spectrum(fold))
    return (dy, dx), score


def _read_aligned(folds: list[np.ndarray]) -> int | None:
    """Sum the folded tiles whose pilot shows, each moved back by its own shift (a sub-pixel shift, in the
    tile's spectrum), and read the sum."""
    pilots = [(_pilot(fold), fold) for fold in folds]
    spectra = [np.fft.rfft2(fold) * _shift_ramp(shift) for (shift, score), fold in pilots if score >= _ALIGN_MIN_SCORE]
    if len(spectra) < 2:
        return None
    return _read_folded(np.fft.irfft2(np.sum(spectra, axis=0), s=(TILE, TILE)).astype(np.float32))[0]


def _shift_ramp(shift: tuple[float, float]) -> np.ndarray:
    """The rfft2 phase ramp that moves a tile back by ``shift`` (dy, dx) pixels, cyclically."""
    ky = np.fft.fftfreq(TILE)[:, None]
    kx = np.fft.rfftfreq(TILE)[None, :]
    return np.exp(2j * np.pi * (ky * shift[0] + kx * shift[1]))
