"""Hostile uploads: files built to cost the server time or memory, for tests and bench/hostile.py.

Each builder returns real, well-formed-looking bytes (valid signatures, correct CRCs and lengths)
whose structure or declared size is the attack: millions of empty segments or chunks, a few
kilobytes that declare tens of megapixels, more progressive scans than any encoder writes.
"""

import io
import struct
import zlib

from PIL import Image

MB = 1024 * 1024


def _small_image(fmt: str, size: tuple[int, int] = (64, 48), **options) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", size, (120, 160, 200)).save(buffer, fmt, **options)
    return buffer.getvalue()


def jpeg_with_empty_comments(total_bytes: int) -> bytes:
    """A small JPEG with ~total_bytes/4 empty COM segments (FF FE 00 02) before its first marker."""
    jpeg = _small_image("JPEG")
    count = max(0, (total_bytes - len(jpeg)) // 4)
    return jpeg[:2] + b"\xff\xfe\x00\x02" * count + jpeg[2:]


def png_with_empty_chunks(total_bytes: int) -> bytes:
    """A small PNG with ~total_bytes/12 empty, CRC-correct, safe-to-copy ancillary chunks after IHDR."""
    png = _small_image("PNG")
    chunk = b"\x00\x00\x00\x00" + b"zzZz" + zlib.crc32(b"zzZz").to_bytes(4, "big")
    count = max(0, (total_bytes - len(png)) // len(chunk))
    ihdr_end = 8 + 25
    return png[:ihdr_end] + chunk * count + png[ihdr_end:]


def webp_with_empty_chunks(total_bytes: int) -> bytes:
    """A small extended WebP followed by ~total_bytes/8 empty unknown RIFF chunks."""
    webp = _small_image("WEBP", quality=80)
    body = webp[12:]
    count = max(0, (total_bytes - len(webp)) // 8)
    body += b"ZZZZ\x00\x00\x00\x00" * count
    return b"RIFF" + (len(body) + 4).to_bytes(4, "little") + b"WEBP" + body


def pixel_bomb(fmt: str, width: int = 7000, height: int = 7000) -> bytes:
    """A flat image of width x height pixels: a few kilobytes that decode to width*height*3 bytes or more."""
    options = {"lossless": True} if fmt == "WEBP" else {"optimize": True} if fmt == "PNG" else {"quality": 50}
    buffer = io.BytesIO()
    Image.new("L" if fmt == "PNG" else "RGB", (width, height), 128).save(buffer, fmt, **options)
    return buffer.getvalue()


def png_declaring(width: int, height: int) -> bytes:
    """A PNG whose IHDR declares width x height with one tiny IDAT: a header-only pixel claim."""
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    idat = zlib.compress(b"\x00" * 16)

    def chunk(kind: bytes, data: bytes) -> bytes:
        return len(data).to_bytes(4, "big") + kind + data + zlib.crc32(kind + data).to_bytes(4, "big")

    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", idat) + chunk(b"IEND", b"")


def jpeg_with_many_scans(scans: int, side: int = 2048) -> bytes:
    """A progressive JPEG whose scan list is repeated: every extra scan makes the decoder walk the image again.

    The first full progressive scan script is kept, then its last (AC refinement) scan is appended
    `scans` times; each is a valid, nearly empty scan over every block.
    """
    buffer = io.BytesIO()
    Image.new("L", (side, side), 100).save(buffer, "JPEG", progressive=True, quality=90)
    data = buffer.getvalue()
    last_sos = data.rfind(b"\xff\xda")
    eoi = data.rfind(b"\xff\xd9")
    return data[:eoi] + data[last_sos:eoi] * scans + data[eoi:]


def duplicate_ihdr_png() -> bytes:
    """A PNG with a second IHDR chunk right after the first."""
    png = _small_image("PNG")
    ihdr = png[8:33]
    return png[:33] + ihdr + png[33:]


def duplicate_sof_jpeg() -> bytes:
    """A JPEG with its frame header (SOF) repeated."""
    jpeg = _small_image("JPEG")
    start = jpeg.find(b"\xff\xc0")
    length = int.from_bytes(jpeg[start + 2 : start + 4], "big")
    sof = jpeg[start : start + 2 + length]
    return jpeg[: start + 2 + length] + sof + jpeg[start + 2 + length :]


def photo_like(fmt: str, megapixels: float, mode: str = "RGB") -> bytes:
    """A 4:3 image of smooth random texture (upsampled noise): costly to encode, like a photograph."""
    import numpy as np

    width = int((megapixels * 1e6 * 4 / 3) ** 0.5)
    height = int(megapixels * 1e6) // width
    channels = len(mode)
    noise = np.random.default_rng(7).integers(0, 256, (height // 8 + 1, width // 8 + 1, channels), dtype=np.uint8)
    image = Image.fromarray(noise if channels > 1 else noise[..., 0]).resize((width, height), Image.Resampling.BILINEAR)
    buffer = io.BytesIO()
    options = {"quality": 90} if fmt in ("JPEG", "WEBP") else {}
    image.save(buffer, fmt, **options)
    return buffer.getvalue()
