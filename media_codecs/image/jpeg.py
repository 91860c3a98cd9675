"""JPEG: the token in an XMP APP1 segment; watermark re-encoded with the input's own tables.

Container surgery works on the marker segments before the first SOS (ITU-T T.81 B.1.1):
each segment is kept as the exact bytes read, and everything from SOS on (entropy-coded
data, later scans, EOI, any trailing bytes) is one opaque tail. Token operations only add,
replace or drop the XMP segment, so they never touch image data.

Limits, checked while parsing and before any decoding (real files stay far below them):
at most MAX_HEADER_SEGMENTS marker segments before the first scan (a camera file has about
ten; ICC profiles and extended XMP split over APP segments reach a few hundred), exactly one
frame header, and at most MAX_SCANS scans. A progressive decoder walks the whole coefficient
buffer for every scan, so scans times pixels is bounded too (MAX_SCAN_PIXELS).
"""

from __future__ import annotations

import io
import re
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

_SOI = b"\xff\xd8"
_SOS, _EOI, _COM, _APP0, _APP1, _APP11, _APP14 = 0xDA, 0xD9, 0xFE, 0xE0, 0xE1, 0xEB, 0xEE
# T.81 table E.1: markers without a length field (TEM, RSTn); SOI/EOI are handled apart.
_STANDALONE_MARKERS = frozenset({0x01, *range(0xD0, 0xD8)})
# T.81 table B.1: SOF0..SOF15 except DHT (C4), JPG (C8) and DAC (CC).
_SOF_MARKERS = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}
# XMP Specification Part 3, 1.1.3: the namespace URI and a NUL open the APP1 payload.
XMP_HEADER = b"http://ns.adobe.com/xap/1.0/\x00"
_EXIF_HEADER = b"Exif\x00\x00"
_MAX_SEGMENT_PAYLOAD = 0xFFFF - 2  # the length field counts itself
_MPF_HEADER = b"MPF\x00"  # CIPA DC-007 multi-picture index in APP2: the file holds several images
_FILL_BYTES = re.compile(rb"\xff*")
_SOS_MARKER = b"\xff\xda"  # entropy-coded data stuffs every 0xFF with 0x00, so this is always a marker
# A C2PA manifest store travels in APP11 JPEG XT segments ("JP", box instance En, sequence Z): the
# first one has the store's jumd UUID, starting "c2pa", at byte 24 of its payload (CI, En, Z, jumb
# header, jumd header); the rest share its En (c2pa-rs jpeg_io.rs; C2PA 2.2 A.3.3).
JPEG_XT = b"JP"
_C2PA_MARK_OFFSET, _C2PA_MARK = 24, b"c2pa"

MAX_HEADER_SEGMENTS = 4096
MAX_SCANS = 100
MAX_SCAN_PIXELS = 1_000_000_000  # scans x pixels: 20 scans of 50 MP, 100 of 10 MP


@dataclass(frozen=True)
class Segment:
    marker: int
    raw: bytes | memoryview  # the bytes as read: fill bytes, marker, length and payload
    payload_start: int  # where the payload begins in `raw`

    @property
    def payload(self) -> bytes:
        return bytes(self.raw[self.payload_start :])

    def payload_startswith(self, prefix: bytes) -> bool:
        return self.raw[self.payload_start : self.payload_start + len(prefix)] == prefix

    @property
    def is_xmp(self) -> bool:
        return self.marker == _APP1 and self.payload_startswith(XMP_HEADER)

    @property
    def is_exif(self) -> bool:
        return self.marker == _APP1 and self.payload_startswith(_EXIF_HEADER)

    @property
    def starts_c2pa_store(self) -> bool:
        begin = self.payload_start + _C2PA_MARK_OFFSET
        return (self.marker == _APP11 and self.payload_startswith(JPEG_XT)
                and self.raw[begin : begin + len(_C2PA_MARK)] == _C2PA_MARK)

    def continues_c2pa_store(self, box_instance: bytes) -> bool:
        return self.marker == _APP11 and self.payload_startswith(JPEG_XT + box_instance)

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
    return Segment(marker, raw, 4)


@dataclass(frozen=True)
class JpegContainer:
    segments: list[Segment]  # every marker segment before the first SOS
    tail: memoryview  # from the first SOS to the end of the file
    size: tuple[int, int]
    scans: int


def parse_header(data: bytes) -> tuple[list[Segment], memoryview]:
    """Split a JPEG into its header segments and the tail starting at the first SOS.

    Raises UnsupportedFormat when `data` is not a JPEG, CorruptMedia when truncated,
    MediaTooLarge past MAX_HEADER_SEGMENTS.
    """
    if not data.startswith(_SOI):
        raise UnsupportedFormat("not a JPEG file")
    view = memoryview(data)
    segments: list[Segment] = []
    position = len(_SOI)
    while True:
        if len(segments) >= MAX_HEADER_SEGMENTS:
            raise MediaTooLarge(f"the JPEG has more than {MAX_HEADER_SEGMENTS} marker segments before its image data")
        start = position
        # T.81 B.1.1.2: any number of 0xFF fill bytes may precede a marker (skipped in C, not byte by byte)
        position = _FILL_BYTES.match(data, position).end()
        if position == start or position >= len(data):
            raise CorruptMedia("the JPEG header is truncated or malformed")
        marker = data[position]
        position += 1
        if marker in (_SOS, _EOI):
            return segments, view[start:]
        if marker in _STANDALONE_MARKERS:
            segments.append(Segment(marker, view[start:position], position - start))
            continue
        position = _read_segment(data, view, start, position, marker, segments)


def _read_segment(data: bytes, view: memoryview, start: int, position: int, marker: int, out: list[Segment]) -> int:
    if marker in (0x00, 0xD8) or position + 2 > len(data):
        raise CorruptMedia("the JPEG header is truncated or malformed")
    length = int.from_bytes(data[position : position + 2], "big")
    end = position + length
    if length < 2 or end > len(data):
        raise CorruptMedia("a JPEG segment runs past the end of the file")
    out.append(Segment(marker, view[start:end], position + 2 - start))
    return end


def parse(data: bytes) -> JpegContainer:
    """Header segments, tail, frame size and scan count, with every structural limit checked.

    Raises UnsupportedFormat, CorruptMedia (no frame header, or two), MediaTooLarge.
    """
    segments, tail = parse_header(data)
    size = image_size(segments)
    scans = data.count(_SOS_MARKER, len(data) - len(tail))
    if scans > MAX_SCANS or scans * size[0] * size[1] > MAX_SCAN_PIXELS:
        raise MediaTooLarge(f"the JPEG has {scans} scans; at most {MAX_SCANS}, and "
                            f"{MAX_SCAN_PIXELS // 1_000_000} megapixels of scans in all")
    return JpegContainer(segments, tail, size, scans)


def assemble(segments: list[Segment], tail: bytes | memoryview) -> bytes:
    """Join header segments and the tail back into a file."""
    return _SOI + b"".join(segment.raw for segment in segments) + tail


def image_size(segments: list[Segment]) -> tuple[int, int]:
    """Width and height from the one SOF segment. Raises CorruptMedia when there is none, or two."""
    frames = [segment for segment in segments if segment.marker in _SOF_MARKERS]
    if len(frames) != 1 or len(frames[0].raw) - frames[0].payload_start < 5:
        raise CorruptMedia("the JPEG must have exactly one frame header (SOF)")
    payload = frames[0].payload
    height = int.from_bytes(payload[1:3], "big")
    width = int.from_bytes(payload[3:5], "big")
    return width, height


def without_c2pa_store(segments: list[Segment]) -> list[Segment]:
    """The segments less every APP11 segment of a C2PA manifest store (all of them, by box instance)."""
    instances = {bytes(segment.payload[2:4]) for segment in segments if segment.starts_c2pa_store}
    if not instances:
        return segments
    return [segment for segment in segments
            if not any(segment.continues_c2pa_store(instance) for instance in instances)]


def _xmp_index(segments: list[Segment]) -> int | None:
    return next((i for i, segment in enumerate(segments) if segment.is_xmp), None)


def _xmp_insert_index(segments: list[Segment]) -> int:
    # After JFIF (APP0) and EXIF (APP1), which readers expect first (JFIF 1.02 section 4.
    # and Exif 2.32 4.5.4), and before everything else.
    index = 0
    while index < len(segments) and (segments[index].marker == _APP0 or segments[index].is_exif):
        index += 1
    return index


class JpegCodec(ImageCodec):
    format = "jpeg"
    mime_type = "image/jpeg"
    pillow_format = "JPEG"
    magic = ((0, b"\xff\xd8\xff"),)  # SOI, then the 0xFF of the first marker
    max_sign_pixels = 25_000_000  # a 6000 x 4000 camera frame

    @property
    def c2pa_carrier(self) -> Carrier:
        """The store travels in APP11 segments; the C2PA package is imported when a manifest is first met."""
        from media_codecs.c2pa.carriers.jpeg import JPEG_CARRIER

        return JPEG_CARRIER

    def parse(self, data: bytes) -> JpegContainer:
        return parse(data)

    def canvas_size(self, container: JpegContainer) -> tuple[int, int]:
        return container.size

    def embed_token(self, content: bytes | Media, token: str, disclosure: Disclosure | None = None) -> bytes:
        """Put `token` in the XMP segment, merged into an existing packet if there is one.

        Raises UnsupportedFormat, CorruptMedia; ValueError for a token XML cannot carry.
        """
        container = self.media(content).container
        segments = list(container.segments)
        index = _xmp_index(segments)
        existing = None if index is None else _xmp_packet(segments[index])
        segment = make_segment(_APP1, XMP_HEADER + xmp.merge_token(existing, token, disclosure))
        if index is None:
            segments.insert(_xmp_insert_index(segments), segment)
        else:
            segments[index] = segment
        return assemble(segments, container.tail)

    def extract_token(self, content: bytes | Media) -> str | None:
        """Read our token from the XMP segment. Raises UnsupportedFormat, CorruptMedia."""
        segments = self.media(content).container.segments
        index = _xmp_index(segments)
        return None if index is None else xmp.read_token(_xmp_packet(segments[index]))

    def strip_token(self, content: bytes | Media) -> bytes:
        """Remove our token and any C2PA manifest store (the other container a signed JPEG may gain:
        `POST /v1/records/:id/c2pa/embed`); the XMP segment goes too when nothing else is left in it.

        Raises UnsupportedFormat, CorruptMedia.
        """
        media = self.media(content)
        segments = without_c2pa_store(media.container.segments)
        changed = len(segments) != len(media.container.segments)
        index = _xmp_index(segments)
        packet = None if index is None else _xmp_packet(segments[index])
        remaining = None if packet is None else xmp.remove_token(packet)
        if packet is not None and remaining != packet:
            segments, changed = list(segments), True
            if remaining is None:
                del segments[index]
            else:
                segments[index] = make_segment(_APP1, XMP_HEADER + remaining)
        return assemble(segments, media.container.tail) if changed else media.data

    def decoder_input(self, media: Media) -> bytes:
        """SOI, the coding segments (tables, frame, restart interval, Adobe transform) and the scans."""
        container = media.container
        return assemble([segment for segment in container.segments if not segment.is_metadata], container.tail)

    def check_watermarkable(self, media: Media) -> None:
        if any(segment.marker == 0xE2 and segment.payload_startswith(_MPF_HEADER)
               for segment in media.container.segments):
            raise UnsupportedFormat("multi-picture JPEGs (MPO) cannot be watermarked")

    def encoder_options(self, original: Image.Image) -> dict[str, object]:
        """The input's quantisation tables, chroma subsampling and progressive flag.

        `quality="keep"` would do this, but only for an image Pillow opened unmodified.
        Huffman tables are optimised so the re-encoded file stays near the input's size.
        """
        from PIL import JpegImagePlugin

        options: dict[str, object] = {
            "qtables": original.quantization,
            "optimize": True,
            "progressive": bool(original.info.get("progressive") or original.info.get("progression")),
        }
        sampling = JpegImagePlugin.get_sampling(original)
        if original.mode == "RGB" and sampling != -1:
            options["subsampling"] = sampling
        return options

    def reencode(self, media: Media, marked: Image.Image, options: dict[str, object]) -> bytes:
        """Every APPn and COM segment of the input (EXIF with its orientation, ICC, XMP with any
        token) is carried over byte for byte, around newly coded tables, frame and scans."""
        buffer = io.BytesIO()
        with pixels.decoder_errors():
            marked.save(buffer, "JPEG", **options)
        encoded_segments, encoded_tail = parse_header(buffer.getvalue())
        metadata = [segment for segment in media.container.segments if segment.is_metadata]
        coding = [segment for segment in encoded_segments if not segment.is_metadata]
        return assemble(metadata + coding, encoded_tail)


def _xmp_packet(segment: Segment) -> bytes:
    return bytes(segment.raw[segment.payload_start + len(XMP_HEADER) :])


CODEC = JpegCodec()
