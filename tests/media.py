"""Real photographs (scikit-image's bundled samples) encoded for the API tests, and attacks on them."""

import functools
import io

import numpy as np
from PIL import Image
from skimage import data as samples

FORMATS = {"jpeg": "JPEG", "png": "PNG", "webp": "WEBP"}
MIME = {"jpeg": "image/jpeg", "png": "image/png", "webp": "image/webp"}


@functools.cache
def _pixels(name: str) -> np.ndarray:
    return np.asarray(getattr(samples, name)())


@functools.cache  # bytes cannot be changed by a caller; PNG and WebP encodings cost 50-100 ms each
def photo_bytes(name: str = "astronaut", fmt: str = "jpeg") -> bytes:
    options = {"quality": 90} if fmt in ("jpeg", "webp") else {}
    return encode(Image.fromarray(_pixels(name)), fmt, **options)


def encode(image: Image.Image, fmt: str, **options) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, FORMATS[fmt], **options)
    return buffer.getvalue()


def decode(data: bytes) -> Image.Image:
    image = Image.open(io.BytesIO(data))
    image.load()
    return image


def strip_metadata(data: bytes, fmt: str) -> bytes:
    """Drop every metadata container by re-writing the file's pixels losslessly where the format allows.

    For JPEG the scan data is kept as is (Pillow re-encoding would change it), so only the XMP/EXIF
    segments go: that is what exiftool -all= does.
    """
    from media_codecs import get_codec

    return get_codec(fmt).strip_token(data)


def reencode_jpeg(data: bytes, quality: int = 75) -> bytes:
    return encode(decode(data).convert("RGB"), "jpeg", quality=quality)
