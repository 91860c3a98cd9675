"""Tests for the image luminance the watermark reads and writes."""

import numpy as np
from PIL import Image

from media_codecs.image import pixels

_WEIGHTS = tuple(np.float32(weight) for weight in (0.299, 0.587, 0.114))


def _every_colour(first_row: int, rows: int) -> np.ndarray:
    """Rows of the 4096 x 4096 image holding each of the 2^24 RGB colours once."""
    index = np.arange(first_row * 4096, (first_row + rows) * 4096, dtype=np.uint32)
    return np.stack([index >> 16, (index >> 8) & 255, index & 255], axis=-1).astype(np.uint8).reshape(rows, 4096, 3)


def _uint8_times_float32(rgb: np.ndarray) -> np.ndarray:
    """The definition: uint8 channels times float32 BT.601 weights, summed red, green, blue."""
    y = rgb[..., 0] * _WEIGHTS[0]
    y += rgb[..., 1] * _WEIGHTS[1]
    y += rgb[..., 2] * _WEIGHTS[2]
    return y


def test_luminance_is_bit_for_bit_the_float32_bt601_sum_for_every_colour():
    for first_row in range(0, 4096, 512):
        rgb = _every_colour(first_row, 512)
        expected = _uint8_times_float32(rgb).view(np.uint32)
        assert np.array_equal(pixels.luminance(Image.fromarray(rgb, "RGB")).view(np.uint32), expected)
        rgba = np.concatenate([rgb, np.full((*rgb.shape[:2], 1), 200, np.uint8)], axis=-1)
        assert np.array_equal(pixels.luminance(Image.fromarray(rgba, "RGBA")).view(np.uint32), expected)


def test_luminance_of_a_greyscale_image_is_its_values():
    grey = np.arange(256 * 3, dtype=np.uint32).reshape(24, 32).astype(np.uint8)
    y = pixels.luminance(Image.fromarray(grey, "L"))
    assert y.dtype == np.float32
    assert np.array_equal(y, grey.astype(np.float32))
    assert np.array_equal(pixels.luminance(Image.fromarray(np.stack([grey, grey], axis=-1), "LA")), y)


def test_luminance_reads_a_strided_view_as_a_copy():
    rgb = _every_colour(0, 16)[:, ::3]  # not contiguous
    assert np.array_equal(pixels._luminance_of(rgb).view(np.uint32), _uint8_times_float32(rgb).view(np.uint32))
