"""PNG: the token in an `iTXt` chunk with keyword `XML:com.adobe.xmp`; lossless watermark.

Container surgery works on the chunk list (PNG spec, 3rd ed., section 5.3): each chunk is
kept as the exact bytes read, and only the XMP chunk is added, replaced or dropped, so token
operations never touch image data. New chunks get a correct CRC-32 over type and data.
"""

from __future__ import annotations

import io
import zlib
from dataclasses import dataclass

from media_codecs import xmp
from media_codecs.base import Codec
from media_codecs.errors import CorruptMedia, MediaTooLarge, UnsupportedFormat
from media_codecs.image import pixels
from media_codecs.image.phash import phash_hex

SIGNATURE = b"\x89PNG\r\n\x1a\n"
# XMP Specification Part 3, 1.1.5: iTXt, this keyword, and the packet as the text.
XMP_KEYWORD = b"XML:com.adobe.xmp"
_MAX_CHUNK_LENGTH = 2**31 - 1  # PNG 5.3: lengths above this are invalid
_MAX_XMP_BYTES = 16 * 1024 * 1024  # bound on inflating a compressed XMP chunk
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
    data: bytes
    raw: bytes  # length, type, data and CRC as read

    @property
    def is_xmp(self) -> bool:
        return self.type == b"iTXt" and self.data.startswith(XMP_KEYWORD + b"\x00")


def make_chunk(chunk_type: bytes, data: bytes) -> Chunk:
    """Build a chunk with its CRC-32 over type and data (PNG 5.3)."""
    crc = zlib.crc32(chunk_type + data).to_bytes(4, "big")
    return Chunk(chunk_type, data, len(data).to_bytes(4, "big") + chunk_type + data + crc)


def parse_chunks(data: bytes) -> tuple[list[Chunk], bytes]:
    """Split a PNG into its chunks, IHDR to IEND, and any bytes after IEND.

    Raises UnsupportedFormat when `data` is not a PNG, CorruptMedia when truncated.
    """
    if not data.startswith(SIGNATURE):
        raise UnsupportedFormat("not a PNG file")
    chunks: list[Chunk] = []
    position = len(SIGNATURE)
    while not chunks or chunks[-1].type != b"IEND":
        if position + 12 > len(data):
            raise CorruptMedia("the PNG is truncated before its IEND chunk")
        length = int.from_bytes(data[position : position + 4], "big")
        end = position + 12 + length
        if length > _MAX_CHUNK_LENGTH or end > len(data):
            raise CorruptMedia("a PNG chunk runs past the end of the file")
        chunk_type = data[position + 4 : position + 8]
        chunks.append(Chunk(chunk_type, data[position + 8 : end - 4], data[position:end]))
        position = end
    if chunks[0].type != b"IHDR" or len(chunks[0].data) != 13:
        raise CorruptMedia("the PNG does not start with a valid IHDR chunk")
    return chunks, data[position:]


def assemble(chunks: list[Chunk], trailer: bytes = b"") -> bytes:
    """Join chunks (and the bytes that followed IEND) back into a file."""
    return SIGNATURE + b"".join(chunk.raw for chunk in chunks) + trailer


def image_size(chunks: list[Chunk]) -> tuple[int, int]:
    """Width and height from IHDR."""
    header = chunks[0].data
    return int.from_bytes(header[0:4], "big"), int.from_bytes(header[4:8], "big")


def xmp_packet(chunk: Chunk) -> bytes:
    """The XMP packet of an XMP iTXt chunk, inflated when compressed.

    Raises CorruptMedia for a bad CRC or layout, MediaTooLarge for an oversized packet.
    """
    if zlib.crc32(chunk.type + chunk.data).to_bytes(4, "big") != chunk.raw[-4:]:
        raise CorruptMedia("the PNG XMP chunk fails its CRC check")
    # iTXt (PNG 11.3.3.4): keyword NUL, compression flag, method, language NUL, translated keyword NUL.
    fields = chunk.data[len(XMP_KEYWORD) + 1 :]
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


class PngCodec(Codec):
    format = "png"
    family = "image"
    token_source = "xmp"
    mime_type = "image/png"

    def sniff(self, head: bytes) -> bool:
        """The eight-byte PNG signature."""
        return head.startswith(SIGNATURE)

    def embed_token(self, data: bytes, token: str) -> bytes:
        """Put `token` in the XMP chunk (merged into an existing packet), placed before IDAT.

        Raises UnsupportedFormat, CorruptMedia, MediaTooLarge; ValueError for a bad token.
        """
        chunks, trailer = parse_chunks(data)
        index = _xmp_index(chunks)
        existing = None if index is None else xmp_packet(chunks[index])
        chunk = make_xmp_chunk(xmp.merge_token(existing, token))
        if index is None:
            chunks.insert(_xmp_insert_index(chunks), chunk)
        else:
            chunks[index] = chunk
        return assemble(chunks, trailer)

    def extract_token(self, data: bytes) -> str | None:
        """Read our token from the XMP chunk. Raises UnsupportedFormat, CorruptMedia, MediaTooLarge."""
        chunks, _ = parse_chunks(data)
        index = _xmp_index(chunks)
        return None if index is None else xmp.read_token(xmp_packet(chunks[index]))

    def strip_token(self, data: bytes) -> bytes:
        """Remove our token; the XMP chunk goes too when nothing else is left in it.

        Raises UnsupportedFormat, CorruptMedia, MediaTooLarge.
        """
        chunks, trailer = parse_chunks(data)
        index = _xmp_index(chunks)
        if index is None:
            return data
        packet = xmp_packet(chunks[index])
        remaining = xmp.remove_token(packet)
        if remaining == packet:
            return data
        if remaining is None:
            del chunks[index]
        else:
            chunks[index] = make_xmp_chunk(remaining)
        return assemble(chunks, trailer)

    def embed_watermark(self, data: bytes, mark_id: int) -> bytes:
        """Re-encode losslessly with `mark_id` in the luminance, keeping the ancillary chunks.

        Text, ICC, EXIF, XMP (with any token) and colour chunks are carried over byte for
        byte; callers embed the token afterwards. Only 8-bit greyscale/truecolour (with or
        without alpha) is supported. Raises UnsupportedFormat (palette, 16-bit, animated,
        too small), CorruptMedia, MediaTooLarge.
        """
        chunks, trailer = parse_chunks(data)
        pixels.check_pixel_count(*image_size(chunks))
        _require_watermarkable(chunks)
        image = pixels.decode_still(data, "PNG")
        marked = pixels.watermark_image(image, mark_id)
        buffer = io.BytesIO()
        with pixels.decoder_errors():
            marked.save(buffer, "PNG")
        encoded, _ = parse_chunks(buffer.getvalue())
        return assemble(_with_new_pixels(chunks, encoded), trailer)

    def extract_watermark(self, data: bytes) -> int | None:
        """Read the mark id from the luminance. Raises CorruptMedia, MediaTooLarge."""
        self.check_limits(data)
        return pixels.read_watermark(pixels.decode_first_frame(data, "PNG"))

    def perceptual_hash(self, data: bytes) -> str | None:
        """pHash of the decoded picture. Raises UnsupportedFormat, CorruptMedia, MediaTooLarge."""
        self.check_limits(data)
        image = pixels.open_image(data, "PNG")
        with pixels.decoder_errors():
            return phash_hex(image)

    def check_limits(self, data: bytes) -> None:
        """Check the IHDR dimensions. Raises MediaTooLarge, UnsupportedFormat, CorruptMedia."""
        chunks, _ = parse_chunks(data)
        pixels.check_pixel_count(*image_size(chunks))


def _require_watermarkable(chunks: list[Chunk]) -> None:
    bit_depth, colour_type = chunks[0].data[8], chunks[0].data[9]
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
