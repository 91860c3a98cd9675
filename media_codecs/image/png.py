"""PNG: the token in an `iTXt` chunk with keyword `XML:com.adobe.xmp`; lossless watermark.

Container surgery works on the chunk list (PNG spec, 3rd ed., section 5.3): each chunk is
kept as the exact bytes read, and only the XMP chunk is added, replaced or dropped, so token
operations never touch image data. New chunks get a correct CRC-32 over type and data.

Limits, checked while parsing and before any decoding: at most MAX_CHUNKS chunks (libpng writes
8 KB IDAT chunks, so a 50 MB file has about 6,400; we allow ten times that), of which at most
MAX_METADATA_CHUNKS are not IDAT, and exactly one IHDR, first. Pillow decodes a rebuilt file
holding only IHDR, PLTE, tRNS, one IDAT and IEND.
"""

from __future__ import annotations

import io
import zlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

from media_codecs import xmp
from media_codecs.base import Media
from media_codecs.disclosure import Disclosure
from media_codecs.errors import CorruptMedia, MediaTooLarge, UnsupportedFormat
from media_codecs.image import pixels
from media_codecs.image.base import ImageCodec

if TYPE_CHECKING:
    from PIL import Image

    from media_codecs.c2pa.carriers import Carrier

SIGNATURE = b"\x89PNG\r\n\x1a\n"
# XMP Specification Part 3, 1.1.5: iTXt, this keyword, and the packet as the text.
XMP_KEYWORD = b"XML:com.adobe.xmp"
C2PA_CHUNK_TYPE = b"caBX"  # a C2PA manifest store (C2PA 2.2 A.3.5)
_MAX_CHUNK_LENGTH = 2**31 - 1  # PNG 5.3: lengths above this are invalid
_MAX_XMP_BYTES = 16 * 1024 * 1024  # bound on inflating a compressed XMP chunk
MAX_CHUNKS = 65_536
MAX_METADATA_CHUNKS = 4_096  # chunks other than IDAT: a real file has a few dozen
_DECODER_CHUNKS = (b"IHDR", b"PLTE", b"tRNS")  # all Pillow needs besides the image data
# Ancillary chunks whose meaning survives a change of pixel values with the same
# colour type and bit depth; unknown ones are kept only when marked safe to copy.
_KEPT_ANCILLARY = frozenset(
    {
        b"tEXt",
        b"zTXt",
        b"iTXt",
        b"iCCP",
        b"sRGB",
        b"gAMA",
        b"cHRM",
        b"cICP",
        b"mDCv",
        b"cLLI",
        b"pHYs",
        b"sBIT",
        b"tRNS",
        b"bKGD",
        b"tIME",
        b"eXIf",
        b"sPLT",
        b"oFFs",
        b"pCAL",
        b"sCAL",
    }
)
_WATERMARK_COLOUR_TYPES = {0: "greyscale", 2: "truecolour", 4: "greyscale with alpha", 6: "truecolour with alpha"}


@dataclass(frozen=True)
class Chunk:
    type: bytes
    raw: bytes | memoryview  # length, type, data and CRC as read

    @property
    def data(self) -> bytes:
        return bytes(self.raw[8:-4])

    @property
    def is_xmp(self) -> bool:
        return self.type == b"iTXt" and self.raw[8 : 8 + len(XMP_KEYWORD) + 1] == XMP_KEYWORD + b"\x00"


def make_chunk(chunk_type: bytes, data: bytes) -> Chunk:
    """Build a chunk with its CRC-32 over type and data (PNG 5.3)."""
    crc = zlib.crc32(chunk_type + data).to_bytes(4, "big")
    return Chunk(chunk_type, len(data).to_bytes(4, "big") + chunk_type + data + crc)


def parse_chunks(data: bytes) -> tuple[list[Chunk], memoryview]:
    """Split a PNG into its chunks, IHDR to IEND, and any bytes after IEND.

    Raises UnsupportedFormat when `data` is not a PNG, CorruptMedia when truncated or when IHDR
    is missing or repeated, MediaTooLarge past MAX_CHUNKS.
    """
    if not data.startswith(SIGNATURE):
        raise UnsupportedFormat("not a PNG file")
    view = memoryview(data)
    chunks: list[Chunk] = []
    position = len(SIGNATURE)
    chunk_type = b""
    metadata_chunks = 0
    while chunk_type != b"IEND":
        if len(chunks) >= MAX_CHUNKS or metadata_chunks > MAX_METADATA_CHUNKS:
            raise MediaTooLarge(f"the PNG has more than {MAX_CHUNKS} chunks, or {MAX_METADATA_CHUNKS} besides IDAT")
        if position + 12 > len(data):
            raise CorruptMedia("the PNG is truncated before its IEND chunk")
        length = int.from_bytes(data[position : position + 4], "big")
        end = position + 12 + length
        if length > _MAX_CHUNK_LENGTH or end > len(data):
            raise CorruptMedia("a PNG chunk runs past the end of the file")
        chunk_type = data[position + 4 : position + 8]
        if chunk_type == b"IHDR" and chunks:
            raise CorruptMedia("the PNG has a second IHDR chunk")
        chunks.append(Chunk(chunk_type, view[position:end]))
        metadata_chunks += chunk_type != b"IDAT"
        position = end
    if chunks[0].type != b"IHDR" or len(chunks[0].raw) != 25:
        raise CorruptMedia("the PNG does not start with a valid IHDR chunk")
    return chunks, view[position:]


def assemble(chunks: list[Chunk], trailer: bytes | memoryview = b"") -> bytes:
    """Join chunks (and the bytes that followed IEND) back into a file."""
    return SIGNATURE + b"".join(chunk.raw for chunk in chunks) + trailer


def image_size(chunks: list[Chunk]) -> tuple[int, int]:
    """Width and height from IHDR."""
    header = chunks[0].raw
    return int.from_bytes(header[8:12], "big"), int.from_bytes(header[12:16], "big")


def xmp_packet(chunk: Chunk) -> bytes:
    """The XMP packet of an XMP iTXt chunk, inflated when compressed.

    Raises CorruptMedia for a bad CRC or layout, MediaTooLarge for an oversized packet.
    """
    data = chunk.data
    if zlib.crc32(chunk.type + data).to_bytes(4, "big") != chunk.raw[-4:]:
        raise CorruptMedia("the PNG XMP chunk fails its CRC check")
    # iTXt (PNG 11.3.3.4): keyword NUL, compression flag, method, language NUL, translated keyword NUL.
    fields = data[len(XMP_KEYWORD) + 1 :]
    if len(fields) < 2:
        raise CorruptMedia("the PNG XMP chunk is truncated")
    is_compressed, rest = fields[0] == 1, fields[2:]
    parts = rest.split(b"\x00", 2)
    if len(parts) != 3:
        raise CorruptMedia("the PNG XMP chunk is malformed")
    return _inflate(parts[2]) if is_compressed else parts[2]


def _inflate(compressed: bytes) -> bytes:
    inflater = zlib.decompressobj()
    try:
        packet = inflater.decompress(compressed, _MAX_XMP_BYTES)
    except zlib.error:
        raise CorruptMedia("the PNG XMP chunk does not inflate") from None
    if inflater.unconsumed_tail:
        raise MediaTooLarge("the PNG XMP packet inflates past 16 MB")
    return packet


def make_xmp_chunk(packet: bytes) -> Chunk:
    """An uncompressed XMP iTXt chunk: flag 0, method 0, empty language and translation."""
    return make_chunk(b"iTXt", XMP_KEYWORD + b"\x00" + b"\x00\x00" + b"\x00" + b"\x00" + packet)


def _xmp_index(chunks: list[Chunk]) -> int | None:
    return next((i for i, chunk in enumerate(chunks) if chunk.is_xmp), None)


def _xmp_insert_index(chunks: list[Chunk]) -> int:
    # Before the image data (and before APNG's first frame control, which belongs with it).
    index = next((i for i, chunk in enumerate(chunks) if chunk.type in (b"IDAT", b"fcTL")), None)
    if index is None:
        raise CorruptMedia("the PNG has no IDAT chunk")
    return index


class PngCodec(ImageCodec):
    format = "png"
    mime_type = "image/png"
    pillow_format = "PNG"
    magic = ((0, SIGNATURE),)
    max_sign_pixels = 16_777_216  # 4096 x 4096

    @property
    def c2pa_carrier(self) -> Carrier:
        """The store travels in a `caBX` chunk; the C2PA package is imported when a manifest is first met."""
        from media_codecs.c2pa.carriers.png import PNG_CARRIER

        return PNG_CARRIER

    def parse(self, data: bytes) -> tuple[list[Chunk], memoryview]:
        return parse_chunks(data)

    def canvas_size(self, container: tuple[list[Chunk], memoryview]) -> tuple[int, int]:
        return image_size(container[0])

    def embed_token(self, content: bytes | Media, token: str, disclosure: Disclosure | None = None) -> bytes:
        """Put `token` in the XMP chunk (merged into an existing packet), placed before IDAT.

        Raises UnsupportedFormat, CorruptMedia, MediaTooLarge; ValueError for a bad token.
        """
        chunks, trailer = self.media(content).container
        chunks = list(chunks)
        index = _xmp_index(chunks)
        existing = None if index is None else xmp_packet(chunks[index])
        chunk = make_xmp_chunk(xmp.merge_token(existing, token, disclosure))
        if index is None:
            chunks.insert(_xmp_insert_index(chunks), chunk)
        else:
            chunks[index] = chunk
        return assemble(chunks, trailer)

    def extract_token(self, content: bytes | Media) -> str | None:
        """Read our token from the XMP chunk. Raises UnsupportedFormat, CorruptMedia, MediaTooLarge."""
        chunks, _ = self.media(content).container
        index = _xmp_index(chunks)
        return None if index is None else xmp.read_token(xmp_packet(chunks[index]))

    def strip_token(self, content: bytes | Media) -> bytes:
        """Remove our token and any C2PA manifest store (`caBX`, the other container a signed PNG may
        gain); the XMP chunk goes too when nothing else is left in it.

        Raises UnsupportedFormat, CorruptMedia, MediaTooLarge.
        """
        media = self.media(content)
        all_chunks, trailer = media.container
        chunks = [chunk for chunk in all_chunks if chunk.type != C2PA_CHUNK_TYPE]
        changed = len(chunks) != len(all_chunks)
        index = _xmp_index(chunks)
        packet = None if index is None else xmp_packet(chunks[index])
        remaining = None if packet is None else xmp.remove_token(packet)
        if packet is not None and remaining != packet:
            changed = True
            if remaining is None:
                del chunks[index]
            else:
                chunks[index] = make_xmp_chunk(remaining)
        return assemble(chunks, trailer) if changed else media.data

    def decoder_input(self, media: Media) -> bytes:
        """IHDR, PLTE and tRNS, the image data joined into one IDAT, IEND.

        Animation chunks are left out, so an APNG decodes to its default image.
        """
        chunks, _ = media.container
        kept = [chunk.raw for chunk in chunks if chunk.type in _DECODER_CHUNKS]
        image_data = [chunk.raw[8:-4] for chunk in chunks if chunk.type == b"IDAT"]
        crc = zlib.crc32(b"IDAT")
        for part in image_data:
            crc = zlib.crc32(part, crc)
        idat_header = sum(len(part) for part in image_data).to_bytes(4, "big") + b"IDAT"
        # One join: the image data is copied once, not once per step.
        idat_crc = crc.to_bytes(4, "big")
        return b"".join([SIGNATURE, *kept, idat_header, *image_data, idat_crc, make_chunk(b"IEND", b"").raw])

    def check_watermarkable(self, media: Media) -> None:
        """Only 8-bit greyscale/truecolour (with or without alpha), not animated."""
        _require_watermarkable(media.container[0])

    def reencode(self, media: Media, marked: Image.Image, options: dict[str, object]) -> bytes:
        """Lossless; text, ICC, EXIF, XMP (with any token) and colour chunks are kept byte for byte."""
        chunks, trailer = media.container
        buffer = io.BytesIO()
        with pixels.decoder_errors():
            marked.save(buffer, "PNG")
        encoded, _ = parse_chunks(buffer.getvalue())
        return assemble(_with_new_pixels(chunks, encoded), trailer)


def _require_watermarkable(chunks: list[Chunk]) -> None:
    bit_depth, colour_type = chunks[0].raw[16], chunks[0].raw[17]
    if colour_type not in _WATERMARK_COLOUR_TYPES:
        raise UnsupportedFormat("palette PNGs cannot be watermarked; convert to truecolour first")
    if bit_depth != 8:
        raise UnsupportedFormat(f"{bit_depth}-bit PNGs cannot be watermarked; only 8-bit")
    if any(chunk.type == b"acTL" for chunk in chunks):
        raise UnsupportedFormat("animated PNGs cannot be watermarked")


def _with_new_pixels(original: list[Chunk], encoded: list[Chunk]) -> list[Chunk]:
    """The original chunk sequence with IHDR and the IDATs taken from the new encoding.

    PNG 14.2: an editor that changes critical chunks must drop unknown ancillary chunks
    that are not safe to copy (bit 5 of the fourth type byte clear).
    """
    new_idats = [chunk for chunk in encoded if chunk.type == b"IDAT"]
    result: list[Chunk] = []
    for chunk in original:
        if chunk.type == b"IHDR":
            result.append(encoded[0])
        elif chunk.type == b"IDAT":
            result.extend(new_idats)
            new_idats = []
        elif chunk.type in (b"PLTE", b"IEND") or chunk.type in _KEPT_ANCILLARY or chunk.type[3] & 0x20:
            result.append(chunk)
    return result


CODEC = PngCodec()
