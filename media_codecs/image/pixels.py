"""Pillow images to luminance and back, behind the decompression-bomb guard.

The watermark works on luminance only: Y of BT.601 full range, the definition Pillow's
"YCbCr" mode uses (Y = 0.299 R + 0.587 G + 0.114 B). With Cb and Cr held fixed, a change
dY of Y is the same change dY of R, G and B (the inverse transform adds Y to every
channel), so we add the watermark's dY to each colour channel and round once, instead of a
lossy round trip through Pillow's 8-bit YCbCr planes. Alpha is never touched.
"""

from __future__ import annotations

import functools
import io
import struct
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from media_codecs.errors import CorruptMedia, MediaTooLarge, UnsupportedFormat

if TYPE_CHECKING:
    import numpy as np
    from PIL import Image

    Picture = Image.Image | np.ndarray

# Decoding cost bound: the float32 working copies of a 50 MP image already take over 1 GB;
# Pillow's own default (89 MP) is higher than a signing service needs.
MAX_PIXELS = 50_000_000

WATERMARK_MODES = ("RGB", "RGBA", "L", "LA")
_BT601_LUMA = (0.299, 0.587, 0.114)  # R, G, B weights, applied as float32 scalars

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
    from PIL import Image, UnidentifiedImageError

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
    from PIL import Image

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
    image.fp = None  # Pillow keeps the file object of a caller's buffer: let the encoded bytes go
    return image


def decode_webp(data: bytes) -> np.ndarray:
    """Decode a WebP still as an RGB or RGBA array (a picture, see `Picture`), with libwebp straight into
    the array when the system has libwebp, else through OpenCV.

    OpenCV's decoder holds an RGBA canvas beside its result, so it peaks far higher for the same pixels
    (libwebp's own, which OpenCV and Pillow also call; the lossy ones too, tests/media_codecs/test_webp.py;
    figures: docs/performance.md, "Figures behind code comments"). Raises CorruptMedia, MediaTooLarge.
    """
    import ctypes

    import numpy as np

    library, features_type = _libwebp()
    if library is None:
        return decode_with_opencv(data)
    features = features_type()
    if library.WebPGetFeaturesInternal(data, len(data), ctypes.byref(features), _WEBP_DECODER_ABI) != 0:
        raise CorruptMedia("the image cannot be decoded")
    check_pixel_count(features.width, features.height)
    channels = 4 if features.has_alpha else 3
    array = np.empty((features.height, features.width, channels), dtype=np.uint8)
    into = library.WebPDecodeRGBAInto if channels == 4 else library.WebPDecodeRGBInto
    if not into(data, len(data), array.ctypes.data, array.nbytes, features.width * channels):
        raise CorruptMedia("the image cannot be decoded")
    return array


_WEBP_DECODER_ABI = 0x0209  # WEBP_DECODER_ABI_VERSION of libwebp 1.2; libwebp accepts any 2.x caller


def _webp_features_type():
    import ctypes

    class WebPFeatures(ctypes.Structure):  # libwebp's WebPBitstreamFeatures
        _fields_ = [("width", ctypes.c_int), ("height", ctypes.c_int), ("has_alpha", ctypes.c_int),
                    ("has_animation", ctypes.c_int), ("format", ctypes.c_int), ("pad", ctypes.c_uint32 * 5)]

    return WebPFeatures


@functools.cache
def _libwebp():
    """libwebp with the three functions used declared, and its features structure: the system's, else the
    copy Pillow's wheels bundle (pillow.libs); None when neither loads."""
    import ctypes
    import ctypes.util
    import glob
    import os

    import PIL

    bundled = sorted(glob.glob(os.path.join(os.path.dirname(PIL.__path__[0]), "pillow.libs", "libwebp-*.so*")))
    library = None
    for name in [ctypes.util.find_library("webp"), *bundled]:
        try:
            library = ctypes.CDLL(name) if name else None
        except OSError:
            continue
        if library is not None:
            break
    features = _webp_features_type()
    if library is not None:
        library.WebPGetFeaturesInternal.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.POINTER(features),
                                                    ctypes.c_int]
        library.WebPGetFeaturesInternal.restype = ctypes.c_int
        for into in (library.WebPDecodeRGBInto, library.WebPDecodeRGBAInto):
            into.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
            into.restype = ctypes.c_void_p
    return library, features


def decode_with_opencv(data: bytes) -> np.ndarray:
    """Decode a still with OpenCV (for WebP: the same libwebp pixels as Pillow), as an RGB or RGBA array.

    Pillow reads WebP through libwebp's animation decoder, which keeps two canvases besides the
    image (about 16 bytes a pixel in all); OpenCV decodes straight into one array. The array is kept
    as it is (a picture, see `Picture`): a Pillow copy would take 4 bytes a pixel beside its 3 (196 MB
    beside 147 MB at 49 MP). Raises CorruptMedia when the data does not decode.
    """
    import cv2
    import numpy as np

    try:
        array = cv2.imdecode(np.frombuffer(data, dtype=np.uint8), cv2.IMREAD_UNCHANGED)
    except cv2.error as error:
        raise CorruptMedia(f"the image cannot be decoded: {error}") from None
    if array is None or array.ndim != 3 or array.shape[2] not in (3, 4):
        raise CorruptMedia("the image cannot be decoded")
    cv2.cvtColor(array, cv2.COLOR_BGRA2RGBA if array.shape[2] == 4 else cv2.COLOR_BGR2RGB, dst=array)
    return array


# --- pictures: a Pillow image, or a decoder's array read where it lies ----------------------------
#
# A `Picture` is either a Pillow image or a uint8 array of RGB or RGBA rows (height x width x 3 or 4, in
# Pillow's channel order). Readers take either; only the rows they need become Pillow images, so a
# 49-megapixel WebP is never held twice.

STRIP_PIXELS = 1 << 20  # a strip read at a time: about a megapixel


def picture_size(picture: Picture) -> tuple[int, int]:
    """Width and height."""
    return (picture.shape[1], picture.shape[0]) if _is_array(picture) else picture.size


def picture_mode(picture: Picture) -> str:
    """Pillow's mode of the picture ("RGB" or "RGBA" for an array)."""
    return ("RGBA" if picture.shape[2] == 4 else "RGB") if _is_array(picture) else picture.mode


def as_image(picture: Picture) -> Image.Image:
    """The picture as a Pillow image (an array is copied: for small pictures and for signing)."""
    return crop(picture, (0, 0, *picture_size(picture))) if _is_array(picture) else picture


def crop(picture: Picture, box: tuple[int, int, int, int]) -> Image.Image:
    """The pixels in `box` (left, top, right, bottom) as a Pillow image of the picture's mode."""
    if not _is_array(picture):
        return picture.crop(box)
    import numpy as np
    from PIL import Image

    left, top, right, bottom = box
    return Image.fromarray(np.ascontiguousarray(picture[top:bottom, left:right]), picture_mode(picture))


def strips(picture: Picture, pixels: int = STRIP_PIXELS, *, columns: bool = False) -> Iterator[tuple[int, Image.Image]]:
    """(first row, image of those rows) for bands of whole rows of about `pixels` pixels, top to bottom;
    with `columns`, (first column, image of those columns), left to right."""
    width, height = picture_size(picture)
    step = max(1, pixels // max(height if columns else width, 1))
    for start in range(0, width if columns else height, step):
        if columns:
            yield start, crop(picture, (start, 0, min(width, start + step), height))
        else:
            yield start, crop(picture, (0, start, width, min(height, start + step)))


def _is_array(picture: Picture) -> bool:
    return not hasattr(picture, "mode")


def require_watermarkable_mode(image: Picture) -> None:
    """Raise UnsupportedFormat unless the mode is one we can mark and re-encode as it was."""
    mode = picture_mode(image)
    if mode not in WATERMARK_MODES:
        raise UnsupportedFormat(
            f"images in mode {mode} cannot be watermarked; supported: {', '.join(WATERMARK_MODES)}"
        )


def luminance(image: Picture) -> np.ndarray:
    """The BT.601 full-range luminance of an RGB(A) or L(A) image, float32 HxW in 0..255."""
    import numpy as np

    return _luminance_of(np.asarray(image))


def _luminance_of(pixels: np.ndarray) -> np.ndarray:
    # Summed channel by channel: a float32 copy of all three channels at once would take three
    # times the memory of the result. Two channels (LA) or one (L) are greyscale.
    import numpy as np

    if pixels.ndim == 2 or pixels.shape[2] <= 2:
        return (pixels if pixels.ndim == 2 else pixels[..., 0]).astype(np.float32)
    # Each channel is cast to float32 (exact) and then scaled in place: the float32 products and sums
    # of uint8 times a float32 scalar, in the same order, so the same bits (a test compares all 2^24
    # colours), at a seventh of the time (numpy runs mixed uint8-float32 arithmetic through a slow
    # buffered cast).
    red, green, blue = (np.float32(weight) for weight in _BT601_LUMA)
    y = pixels[..., 0].astype(np.float32)
    y *= red
    channel = pixels[..., 1].astype(np.float32)
    channel *= green
    y += channel
    np.copyto(channel, pixels[..., 2])
    channel *= blue
    y += channel
    return y


def watermark_image(image: Picture, mark_id: int) -> Image.Image:
    """Return a copy of `image` with `mark_id` embedded in its luminance; alpha is never touched.

    With Cb and Cr held fixed, a change dY of Y is the same change of R, G and B, so each band
    of the mark is rounded once, added to a uint8 copy of those rows and pasted into the result:
    the memory is the result plus one band. Raises UnsupportedFormat for an unsupported
    mode or an image the watermark cannot carry (too small).
    """
    import numpy as np
    from PIL import Image

    from media_codecs.image import watermark

    require_watermarkable_mode(image)
    (width, height), mode = picture_size(image), picture_mode(image)
    colour_channels = 1 if mode in ("L", "LA") else 3

    def rows_of(first: int, last: int) -> np.ndarray:
        return np.array(crop(image, (0, first, width, last)))  # a writable uint8 copy of those rows

    marked = Image.new(mode, (width, height))
    try:
        for top, delta in watermark.embed_bands(lambda first, last: _luminance_of(rows_of(first, last)),
                                                (height, width), mark_id):
            rows = rows_of(top, top + len(delta))
            _add_in_place(rows, np.rint(delta).astype(np.int16), colour_channels)
            marked.paste(_from_array(rows, mode), (0, top))
    except watermark.WatermarkError as error:
        raise UnsupportedFormat(f"the image cannot carry a watermark: {error}") from None
    return marked


def _add_in_place(rows: np.ndarray, step: np.ndarray, colour_channels: int) -> None:
    # Integer pixels plus a rounded delta is the rounded sum, and int16 arithmetic is much cheaper than
    # float32 on a large image (docs/performance.md, "Figures behind code comments").
    import numpy as np

    if rows.ndim == 2:
        rows[:] = np.clip(rows.astype(np.int16) + step, 0, 255)
        return
    for channel in range(colour_channels):
        rows[..., channel] = np.clip(rows[..., channel].astype(np.int16) + step, 0, 255)


def read_watermark(image: Picture) -> int | None:
    """Return the mark id in `image`'s luminance, or None when none is found.

    Only the centred window the reader looks at is converted to floating point, so the memory a
    read takes does not grow with the image (a 50 MP RGB image would need 600 MB as float32).
    """
    from media_codecs.image import watermark

    image = centre_crop(image, watermark.READ_WINDOW)
    if picture_mode(image) not in WATERMARK_MODES:
        # Reading is more forgiving than writing: any mode Pillow can convert is read.
        with decoder_errors():
            image = image.convert("RGB")
    try:
        return watermark.extract_luma(luminance(image))
    except watermark.WatermarkError:
        return None


def centre_crop(image: Picture, size: int) -> Picture:
    """The centred `size` x `size` window (the whole picture when it is no larger): the same offsets as
    the watermark reader's own window, so cropping first changes nothing."""
    width, height = picture_size(image)
    if width <= size and height <= size:
        return image
    left, top = max(0, (width - size) // 2), max(0, (height - size) // 2)
    with decoder_errors():
        return crop(image, (left, top, left + min(size, width), top + min(size, height)))


def _from_array(pixels: np.ndarray, mode: str) -> Image.Image:
    # Image.fromarray infers L, LA, RGB and RGBA from uint8 arrays of 1 to 4 channels.
    from PIL import Image

    image = Image.fromarray(pixels)
    if image.mode != mode:
        image = image.convert(mode)
    return image
