"""JPEG: the token in an XMP APP1 segment; watermark re-encoded with the input's own tables.

Container surgery works on the marker segments before the first SOS (ITU-T T.81 B.1.1):
each segment is kept as the exact bytes read, and everything from SOS on (entropy-coded
data, later scans, EOI, any trailing bytes) is one opaque tail. Token operations only add,
replace or drop the XMP segment, so they never touch image data.
"""

from __future__ import annotations

import io
from dataclasses import dataclass

from PIL import Image, JpegImagePlugin

from media_codecs import xmp
from media_codecs.base import Codec
from media_codecs.errors import CorruptMedia, UnsupportedFormat
from media_codecs.image import pixels
from media_codecs.image.phash import phash_hex

_SOI = b"\xff\xd8"
_SOS, _EOI, _COM, _APP0, _APP1, _APP14 = 0xDA, 0xD9, 0xFE, 0xE0, 0xE1, 0xEE
# T.81 table E.1: markers without a length field (TEM, RSTn); SOI/EOI are handled apart.
_STANDALONE_MARKERS = frozenset({0x01, *range(0xD0, 0xD8)})
# T.81 table B.1: SOF0..SOF15 except DHT (C4), JPG (C8) and DAC (CC).
_SOF_MARKERS = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}
# XMP Specification Part 3, 1.1.3: the namespace URI and a NUL open the APP1 payload.
XMP_HEADER = b"http://ns.adobe.com/xap/1.0/\x00"
_EXIF_HEADER = b"Exif\x00\x00"
_MAX_SEGMENT_PAYLOAD = 0xFFFF - 2  # the length field counts itself


@dataclass(frozen=True)
class Segment:
    marker: int
    payload: bytes
    raw: bytes  # the bytes as read: fill bytes, marker, length and payload

    @property
    def is_xmp(self) -> bool:
        return self.marker == _APP1 and self.payload.startswith(XMP_HEADER)

    @property
    def is_exif(self) -> bool:
        return self.marker == _APP1 and self.payload.startswith(_EXIF_HEADER)

    @property
    def is_metadata(self) -> bool:
        """APPn and COM segments describe the picture; the rest code it.

        APP14 (Adobe) is excluded: its transform flag says how the components are coded,
        which belongs to the encoder that wrote the scan data.
        """
        return self.marker == _COM or (_APP0 <= self.marker <= 0xEF and self.marker != _APP14)


def make_segment(marker: int, payload: bytes) -> Segment:
    """Build a marker segment. Raises UnsupportedFormat when the payload cannot fit one."""
    if len(payload) > _MAX_SEGMENT_PAYLOAD:
        raise UnsupportedFormat("the XMP packet is larger than one JPEG segment can hold")
    raw = bytes([0xFF, marker]) + (len(payload) + 2).to_bytes(2, "big") + payload
    return Segment(marker, payload, raw)


def parse_header(data: bytes) -> tuple[list[Segment], bytes]:
    """Split a JPEG into its header segments and the tail starting at the first SOS.

    Raises UnsupportedFormat when `data` is not a JPEG, CorruptMedia when truncated.
    """
    if not data.startswith(_SOI):
        raise UnsupportedFormat("not a JPEG file")
    segments: list[Segment] = []
    position = len(_SOI)
    while True:
        start = position
        while position < len(data) and data[position] == 0xFF:
            position += 1  # T.81 B.1.1.2: any number of 0xFF fill bytes may precede a marker
        if position == start or position >= len(data):
            raise CorruptMedia("the JPEG header is truncated or malformed")
        marker = data[position]
        position += 1
        if marker in (_SOS, _EOI):
            return segments, data[start:]
        if marker in _STANDALONE_MARKERS:
            segments.append(Segment(marker, b"", data[start:position]))
            continue
        position = _read_segment(data, start, position, marker, segments)


def _read_segment(data: bytes, start: int, position: int, marker: int, out: list[Segment]) -> int:
    if marker in (0x00, 0xD8) or position + 2 > len(data):
        raise CorruptMedia("the JPEG header is truncated or malformed")
    length = int.from_bytes(data[position : position + 2], "big")
    end = position + length
    if length < 2 or end > len(data):
        raise CorruptMedia("a JPEG segment runs past the end of the file")
    out.append(Segment(marker, data[position + 2 : end], data[start:end]))
    return end


def assemble(segments: list[Segment], tail: bytes) -> bytes:
    """Join header segments and the tail back into a file."""
    return _SOI + b"".join(segment.raw for segment in segments) + tail


def image_size(segments: list[Segment]) -> tuple[int, int]:
    """Width and height from the SOF segment. Raises CorruptMedia when there is none."""
    for segment in segments:
        if segment.marker in _SOF_MARKERS and len(segment.payload) >= 5:
            height = int.from_bytes(segment.payload[1:3], "big")
            width = int.from_bytes(segment.payload[3:5], "big")
            return width, height
    raise CorruptMedia("the JPEG has no frame header (SOF)")


def _xmp_index(segments: list[Segment]) -> int | None:
    return next((i for i, segment in enumerate(segments) if segment.is_xmp), None)


def _xmp_insert_index(segments: list[Segment]) -> int:
    # After JFIF (APP0) and EXIF (APP1), which readers expect first (JFIF 1.02 section 4.
    # and Exif 2.32 4.5.4), and before everything else.
    index = 0
    while index < len(segments) and (segments[index].marker == _APP0 or segments[index].is_exif):
        index += 1
    return index


class JpegCodec(Codec):
    format = "jpeg"
    family = "image"
    token_source = "xmp"
    mime_type = "image/jpeg"

    def sniff(self, head: bytes) -> bool:
        """SOI followed by the 0xFF of the first marker."""
        return head[:3] == b"\xff\xd8\xff"

    def embed_token(self, data: bytes, token: str) -> bytes:
        """Put `token` in the XMP segment, merged into an existing packet if there is one.

        Raises UnsupportedFormat, CorruptMedia; ValueError for a token XML cannot carry.
        """
        segments, tail = parse_header(data)
        index = _xmp_index(segments)
        existing = None if index is None else segments[index].payload[len(XMP_HEADER) :]
        segment = make_segment(_APP1, XMP_HEADER + xmp.merge_token(existing, token))
        if index is None:
            segments.insert(_xmp_insert_index(segments), segment)
        else:
            segments[index] = segment
        return assemble(segments, tail)

    def extract_token(self, data: bytes) -> str | None:
        """Read our token from the XMP segment. Raises UnsupportedFormat, CorruptMedia."""
        segments, _ = parse_header(data)
        index = _xmp_index(segments)
        return None if index is None else xmp.read_token(segments[index].payload[len(XMP_HEADER) :])

    def strip_token(self, data: bytes) -> bytes:
        """Remove our token; the XMP segment goes too when nothing else is left in it.

        Raises UnsupportedFormat, CorruptMedia.
        """
        segments, tail = parse_header(data)
        index = _xmp_index(segments)
        if index is None:
            return data
        packet = segments[index].payload[len(XMP_HEADER) :]
        remaining = xmp.remove_token(packet)
        if remaining == packet:
            return data
        if remaining is None:
            del segments[index]
        else:
            segments[index] = make_segment(_APP1, XMP_HEADER + remaining)
        return assemble(segments, tail)

    def embed_watermark(self, data: bytes, mark_id: int) -> bytes:
        """Re-encode with `mark_id` in the luminance, keeping tables, sampling and metadata.

        Every APPn and COM segment of the input (EXIF with its orientation, ICC, XMP with
        any token) is carried over byte for byte; callers embed the token afterwards.
        Raises UnsupportedFormat (CMYK and other modes, too small), CorruptMedia,
        MediaTooLarge.
        """
        segments, _ = parse_header(data)
        pixels.check_pixel_count(*image_size(segments))
        image = pixels.decode_still(data, "JPEG")
        marked = pixels.watermark_image(image, mark_id)
        encoded_segments, encoded_tail = parse_header(_encode_like(marked, image))
        metadata = [segment for segment in segments if segment.is_metadata]
        coding = [segment for segment in encoded_segments if not segment.is_metadata]
        return assemble(metadata + coding, encoded_tail)

    def extract_watermark(self, data: bytes) -> int | None:
        """Read the mark id from the luminance. Raises CorruptMedia, MediaTooLarge."""
        self.check_limits(data)
        return pixels.read_watermark(pixels.decode_first_frame(data, "JPEG"))

    def perceptual_hash(self, data: bytes) -> str | None:
        """pHash of the decoded picture. Raises UnsupportedFormat, CorruptMedia, MediaTooLarge."""
        self.check_limits(data)
        image = pixels.open_image(data, "JPEG")
        with pixels.decoder_errors():
            return phash_hex(image)

    def check_limits(self, data: bytes) -> None:
        """Check the SOF dimensions. Raises MediaTooLarge, UnsupportedFormat, CorruptMedia."""
        segments, _ = parse_header(data)
        pixels.check_pixel_count(*image_size(segments))


def _encode_like(marked: Image.Image, original: JpegImagePlugin.JpegImageFile) -> bytes:
    """Encode with the input's quantisation tables, chroma subsampling and progressive flag.

    `quality="keep"` would do this, but only for an image Pillow opened unmodified.
    Huffman tables are optimised so the re-encoded file stays near the input's size.
    """
    options: dict[str, object] = {
        "qtables": original.quantization,
        "optimize": True,
        "progressive": bool(original.info.get("progressive") or original.info.get("progression")),
    }
    sampling = JpegImagePlugin.get_sampling(original)
    if marked.mode == "RGB" and sampling != -1:
        options["subsampling"] = sampling
    buffer = io.BytesIO()
    with pixels.decoder_errors():
        marked.save(buffer, "JPEG", **options)
    return buffer.getvalue()


CODEC = JpegCodec()
