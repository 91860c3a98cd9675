"""Pillow images to luminance and back, behind the decompression-bomb guard.

The watermark works on luminance only: Y of BT.601 full range, the definition Pillow's
"YCbCr" mode uses (Y = 0.299 R + 0.587 G + 0.114 B). With Cb and Cr held fixed, a change
dY of Y is the same change dY of R, G and B (the inverse transform adds Y to every
channel), so we add the watermark's dY to each colour channel in floating point and round
once, instead of a lossy round trip through Pillow's 8-bit YCbCr planes. Alpha is never
touched.
"""

from __future__ import annotations

import io
import struct
import zlib
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
from PIL import Image, UnidentifiedImageError

from media_codecs.errors import CorruptMedia, MediaTooLarge, UnsupportedFormat

# Decoding cost bound: the float32 working copies of a 50 MP image already take over 1 GB;
# Pillow's own default (89 MP) is higher than a signing service needs.
MAX_PIXELS = 50_000_000

WATERMARK_MODES = ("RGB", "RGBA", "L", "LA")
_BT601_LUMA = np.array([0.299, 0.587, 0.114], dtype=np.float32)

# What Pillow's decoders raise on malformed input besides OSError (truncated data,
# bad chunk lengths, impossible sizes); all of it means "corrupt" to our callers.
_DECODER_ERRORS = (
    OSError,
    SyntaxError,
    ValueError,
    EOFError,
    struct.error,
    IndexError,
    KeyError,
    TypeError,
    ZeroDivisionError,
    zlib.error,
)


def check_pixel_count(width: int, height: int) -> None:
    """Raise MediaTooLarge when a header declares more than MAX_PIXELS pixels."""
    if width * height > MAX_PIXELS:
        raise MediaTooLarge(f"{width}x{height} exceeds the limit of {MAX_PIXELS} pixels")


@contextmanager
def decoder_errors() -> Iterator[None]:
    """Translate Pillow's exceptions into CodecError subclasses.

    Raises MediaTooLarge for Pillow's decompression-bomb check, UnsupportedFormat for data
    Pillow does not recognise, CorruptMedia for everything a decoder raises on bad data.
    """
    # Every codec checks MAX_PIXELS from its own header parse before Pillow sees the data,
    # and MAX_PIXELS is below Pillow's limits; this catches a lowered Image.MAX_IMAGE_PIXELS.
    try:
        yield
    except Image.DecompressionBombError as error:
        raise MediaTooLarge(str(error)) from None
    except UnidentifiedImageError:
        raise UnsupportedFormat("the image format is not recognised") from None
    except _DECODER_ERRORS as error:
        raise CorruptMedia(f"the image cannot be decoded: {error}") from None


def open_image(data: bytes, expected_format: str) -> Image.Image:
    """Open `data` with Pillow, reading only the header, and check its pixel count.

    Raises UnsupportedFormat when Pillow reads another format than `expected_format`
    (Pillow's name, e.g. "JPEG"), MediaTooLarge, CorruptMedia.
    """
    with decoder_errors():
        image = Image.open(io.BytesIO(data), formats=[expected_format])
    check_pixel_count(*image.size)
    return image


def decode_first_frame(data: bytes, expected_format: str) -> Image.Image:
    """Decode the first (or only) frame, for reading a watermark or a hash.

    Raises UnsupportedFormat, MediaTooLarge, CorruptMedia.
    """
    image = open_image(data, expected_format)
    with decoder_errors():
        image.load()
    return image


def decode_still(data: bytes, expected_format: str) -> Image.Image:
    """Decode the single frame of a still image, for re-encoding it.

    Raises UnsupportedFormat for animations, MediaTooLarge, CorruptMedia.
    """
    image = open_image(data, expected_format)
    with decoder_errors():
        frame_count = getattr(image, "n_frames", 1)
    if frame_count > 1:
        raise UnsupportedFormat("animated or multi-picture images cannot be watermarked")
    with decoder_errors():
        image.load()
    return image


def require_watermarkable_mode(image: Image.Image) -> None:
    """Raise UnsupportedFormat unless the mode is one we can mark and re-encode as it was."""
    if image.mode not in WATERMARK_MODES:
        raise UnsupportedFormat(
            f"images in mode {image.mode} cannot be watermarked; supported: {', '.join(WATERMARK_MODES)}"
        )


def luminance(image: Image.Image) -> np.ndarray:
    """The BT.601 full-range luminance of an RGB(A) or L(A) image, float32 HxW in 0..255."""
    pixels = np.asarray(image, dtype=np.float32)
    if image.mode in ("L", "LA"):
        return pixels if pixels.ndim == 2 else pixels[..., 0]
    return pixels[..., :3] @ _BT601_LUMA


def with_luminance(image: Image.Image, original_y: np.ndarray, marked_y: np.ndarray) -> Image.Image:
    """Return a copy of `image` whose luminance moved from `original_y` to `marked_y`.

    The same mode as the input; alpha bytes are copied unchanged.
    """
    pixels = np.asarray(image).copy()
    delta = (marked_y - original_y).astype(np.float32)
    if pixels.ndim == 2:
        pixels = _shifted(pixels, delta)
    else:
        colour_channels = 1 if image.mode == "LA" else 3
        colour = pixels[..., :colour_channels]
        pixels[..., :colour_channels] = _shifted(colour, delta[..., None])
    return _from_array(pixels, image.mode)


def watermark_image(image: Image.Image, mark_id: int) -> Image.Image:
    """Return `image` with `mark_id` embedded in its luminance.

    Raises UnsupportedFormat for an unsupported mode or an image the watermark cannot
    carry (too small).
    """
    from media_codecs.image import watermark

    require_watermarkable_mode(image)
    y = luminance(image)
    try:
        marked_y = watermark.embed_luma(y, mark_id)
    except watermark.WatermarkError as error:
        raise UnsupportedFormat(f"the image cannot carry a watermark: {error}") from None
    return with_luminance(image, y, marked_y)


def read_watermark(image: Image.Image) -> int | None:
    """Return the mark id in `image`'s luminance, or None when none is found."""
    from media_codecs.image import watermark

    if image.mode not in WATERMARK_MODES:
        # Reading is more forgiving than writing: any mode Pillow can convert is read.
        with decoder_errors():
            image = image.convert("RGB")
    try:
        return watermark.extract_luma(luminance(image))
    except watermark.WatermarkError:
        return None


def _shifted(channels: np.ndarray, delta: np.ndarray) -> np.ndarray:
    # Integer pixels plus a rounded delta is the rounded sum; int16 arithmetic is about 5x cheaper
    # than float32 on a 12-megapixel image (0.1 s against 0.5 s here).
    step = np.rint(delta).astype(np.int16)
    return np.clip(channels.astype(np.int16) + step, 0, 255).astype(np.uint8)


def _from_array(pixels: np.ndarray, mode: str) -> Image.Image:
    # Image.fromarray infers L, LA, RGB and RGBA from uint8 arrays of 1 to 4 channels.
    image = Image.fromarray(pixels)
    if image.mode != mode:
        image = image.convert(mode)
    return image
