"""Real photographs from scikit-image saved in each format, and a stand-in watermark.

The stand-in writes 64 flat 16x16 blocks of luminance into the top-left 128x128 square
(one bit each, dark or light): crude, but it survives JPEG and WebP re-encoding, so format
tests can check that the mark really went through pixels.py and the encoder. The real
watermark is tested in its own module.
"""

from __future__ import annotations

import contextlib
import functools
import io
import shutil
import subprocess
import sys
import types
from collections.abc import Callable

import numpy as np
import pytest
from PIL import Image, ImageCms
from skimage import data as samples

from media_codecs import Codec, CodecError

MARK_ID = 0xDEADBEEF_0BADF00D
TOKEN = "svc_0123456789abcdef.signature-part_1"
OTHER_TOKEN = "svc_fedcba9876543210.another"
XMP_WITH_CREATOR = (
    b'<?xpacket begin="\xef\xbb\xbf" id="W5M0MpCehiHzreSzNTczkc9d"?>\n'
    b'<x:xmpmeta xmlns:x="adobe:ns:meta/">\n'
    b' <rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">\n'
    b'  <rdf:Description rdf:about="" xmlns:dc="http://purl.org/dc/elements/1.1/">\n'
    b"   <dc:creator><rdf:Seq><rdf:li>Ada Lovelace</rdf:li></rdf:Seq></dc:creator>\n"
    b"  </rdf:Description>\n"
    b" </rdf:RDF>\n"
    b"</x:xmpmeta>\n"
    b'<?xpacket end="w"?>'
)
COLOUR_SAMPLES = ("astronaut", "chelsea", "coffee")
_BLOCK, _BITS_PER_SIDE = 16, 8
_DARK, _LIGHT, _TOLERANCE = 72.0, 184.0, 30.0


def photo(name: str) -> np.ndarray:
    """A scikit-image sample as a uint8 array (camera is greyscale)."""
    return _photo(name).copy()


@functools.cache
def _photo(name: str) -> np.ndarray:
    return np.asarray(getattr(samples, name)())


def encode(pixels: np.ndarray | Image.Image, image_format: str, **options: object) -> bytes:
    image = pixels if isinstance(pixels, Image.Image) else Image.fromarray(pixels)
    buffer = io.BytesIO()
    image.save(buffer, image_format, **options)
    return buffer.getvalue()


@functools.cache
def srgb_profile() -> bytes:
    # Cached: the profile header carries its creation time, so two calls can differ.
    return ImageCms.ImageCmsProfile(ImageCms.createProfile("sRGB")).tobytes()


def exif_with_orientation() -> bytes:
    exif = Image.Exif()
    exif[0x0112] = 6  # Orientation: rotate 90 CW to display
    exif[0x010F] = "Provenance Test Camera"  # Make
    return exif.tobytes()


def decoded(data: bytes) -> Image.Image:
    image = Image.open(io.BytesIO(data))
    image.load()
    return image


def has_exiftool() -> bool:
    return shutil.which("exiftool") is not None


def exiftool_token(path: str) -> str:
    """Our token as exiftool reads it from the file (XMP-svc group, binary value)."""
    result = subprocess.run(["exiftool", "-XMP-svc:Token", "-b", path], capture_output=True, check=True, timeout=600)
    return result.stdout.decode()


def _stand_in_embed(y: np.ndarray, mark_id: int) -> np.ndarray:
    side = _BLOCK * _BITS_PER_SIDE
    if min(y.shape) < side:
        raise _WatermarkError("image too small")
    out = y.astype(np.float32).copy()
    for bit in range(64):
        row, column = divmod(bit, _BITS_PER_SIDE)
        value = _LIGHT if mark_id >> bit & 1 else _DARK
        out[row * _BLOCK : (row + 1) * _BLOCK, column * _BLOCK : (column + 1) * _BLOCK] = value
    return out


def _stand_in_embed_bands(luma_rows, shape, mark_id):
    y = luma_rows(0, shape[0])
    marked = _stand_in_embed(y, mark_id)
    yield 0, marked - y


def _stand_in_extract(y: np.ndarray) -> int | None:
    side = _BLOCK * _BITS_PER_SIDE
    if min(y.shape) < side:
        return None
    blocks = y[:side, :side].reshape(_BITS_PER_SIDE, _BLOCK, _BITS_PER_SIDE, _BLOCK)
    means = blocks[:, 4:-4, :, 4:-4].mean(axis=(1, 3)).flatten()
    is_light = np.abs(means - _LIGHT) < _TOLERANCE
    if not (is_light | (np.abs(means - _DARK) < _TOLERANCE)).all():
        return None
    return sum(1 << bit for bit in range(64) if is_light[bit])


class _WatermarkError(Exception):
    pass


@pytest.fixture
def stand_in_watermark(monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    """Replace media_codecs.image.watermark by the block stand-in for one test."""
    import media_codecs.image

    module = types.ModuleType("media_codecs.image.watermark")
    module.WatermarkError = _WatermarkError
    module.READ_WINDOW = 2048
    module.embed_luma = _stand_in_embed
    module.embed_bands = _stand_in_embed_bands
    module.extract_luma = _stand_in_extract
    monkeypatch.setitem(sys.modules, "media_codecs.image.watermark", module)
    monkeypatch.setattr(media_codecs.image, "watermark", module, raising=False)
    return module


def corruptions(data: bytes) -> list[bytes]:
    """Truncations, random bytes behind the format's magic, and byte flips of a file."""
    rng = np.random.default_rng(1234)
    cuts = [data[:n] for n in (0, 1, 4, 11, 12, 20, 33, 64, 100, 300, len(data) // 2, len(data) - 1)]
    noise = [data[:12] + rng.integers(0, 256, size, dtype=np.uint8).tobytes() for size in (0, 7, 50, 4000)]
    flipped = []
    for _ in range(12):
        copy = bytearray(data)
        for position in rng.integers(2, min(len(data), 2000), 4):
            copy[position] ^= 0xFF
        flipped.append(bytes(copy))
    return [*cuts, *noise, *flipped, rng.integers(0, 256, 5000, dtype=np.uint8).tobytes()]


def assert_only_codec_errors(codec: Codec, data: bytes) -> None:
    """Every public method either returns or raises a CodecError on every corruption."""
    calls: list[Callable[[bytes], object]] = [
        lambda d: codec.embed_token(d, TOKEN),
        codec.extract_token,
        codec.strip_token,
        lambda d: codec.embed_watermark(d, MARK_ID),
        codec.extract_watermark,
        codec.fingerprint,
        codec.open,
    ]
    for corrupted in corruptions(data):
        for call in calls:
            with contextlib.suppress(CodecError):
                call(corrupted)
