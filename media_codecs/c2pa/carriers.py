"""Where a C2PA manifest store travels in a file: JPEG APP11 segments and the PNG `caBX` chunk.

A codec names its format's carrier (`Codec.c2pa_carrier`, None for a format that carries no store here);
`carrier_for` asks the codec that detects the file. Each carrier finds, strips and inserts the store,
keeping every other byte of the file as it was (the segment and chunk lists of `image.jpeg` / `image.png`).
Insertion happens at one offset of the stripped file, so the file minus the inserted bytes is the stripped
file: that is what the `c2pa.hash.data` exclusion relies on (docs/decisions.md, "C2PA embed").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from media_codecs.errors import CorruptMedia, MediaTooLarge, UnsupportedFormat
from media_codecs.image import jpeg, png
from media_codecs.registry import detect

_APP0 = 0xE0
_BOX_INSTANCE = b"\x02\x11"  # the En c2pa-rs writes; the same in every segment of the store
SLICE_BYTES = 64_000  # store bytes per APP11 segment, as c2pa-rs slices
CHUNK_TYPE = png.C2PA_CHUNK_TYPE
MAX_STORE_BYTES = 32 * 1024 * 1024  # our manifests are ~15 KB; a thumbnail-laden one a few hundred KB


@dataclass(frozen=True)
class Found:
    """A store found in a file: its bytes, and the range of the file that carries it (the exclusion)."""

    store: bytes
    start: int
    length: int


class Carrier(Protocol):
    """How one format's files carry a C2PA manifest store."""

    mime_type: str

    def find(self, data: bytes) -> Found | None:
        """The store in `data` and the range that carries it, or None. Raises CodecError."""

    def strip(self, data: bytes) -> bytes:
        """`data` without any store (the same bytes when there is none). Raises CodecError."""

    def insert_offset(self, stripped: bytes) -> int:
        """Where the store goes in the stripped file. Raises CodecError."""

    def wrapped(self, store: bytes) -> bytes:
        """The store as the format's segments or chunks. Raises MediaTooLarge."""

    def wrapped_size(self, store_size: int) -> int:
        """The length of `wrapped` for a store of `store_size` bytes."""


class JpegCarrier:
    mime_type = "image/jpeg"

    def find(self, data: bytes) -> Found | None:
        """The C2PA store in the APP11 segments, or None. Raises CodecError for a bad JPEG or store."""
        segments, _ = jpeg.parse_header(data)
        offset, found, pieces, start, length = 2, None, [], 0, 0
        for segment in segments:
            if found is None and segment.starts_c2pa_store:
                found, start = segment.payload[2:4], offset
            if found is not None and segment.continues_c2pa_store(found):
                pieces.append(_slice(segment, len(pieces) + 1))
                length += len(segment.raw)
            offset += len(segment.raw)
        if found is None:
            return None
        store = b"".join(pieces)
        if len(store) > MAX_STORE_BYTES:
            raise MediaTooLarge("the C2PA manifest store is larger than 32 MB")
        return Found(store, start, length)

    def strip(self, data: bytes) -> bytes:
        """`data` without any C2PA store (the same bytes when there is none)."""
        segments, tail = jpeg.parse_header(data)
        kept = jpeg.without_c2pa_store(segments)
        return data if len(kept) == len(segments) else jpeg.assemble(kept, tail)

    def insert_offset(self, stripped: bytes) -> int:
        """Where the store goes: after the leading APP0 (JFIF) segments, or right after SOI (c2pa-rs)."""
        segments, _ = jpeg.parse_header(stripped)
        offset = 2
        for segment in segments:
            if segment.marker != _APP0:
                break
            offset += len(segment.raw)
        return offset

    def wrapped(self, store: bytes) -> bytes:
        """The store as consecutive APP11 segments: CI, En, Z, [LBox+TBox again when Z > 1], a slice."""
        if len(store) > MAX_STORE_BYTES:
            raise MediaTooLarge("the C2PA manifest store is larger than 32 MB")
        segments = []
        for number, start in enumerate(range(0, len(store), SLICE_BYTES), start=1):
            repeat = store[:8] if number > 1 else b""
            header = jpeg.JPEG_XT + _BOX_INSTANCE + number.to_bytes(4, "big") + repeat
            payload = header + store[start : start + SLICE_BYTES]
            segments.append(b"\xff\xeb" + (len(payload) + 2).to_bytes(2, "big") + payload)
        return b"".join(segments)

    def wrapped_size(self, store_size: int) -> int:
        count = -(-store_size // SLICE_BYTES)
        return store_size + count * 12 + (count - 1) * 8


def _slice(segment: jpeg.Segment, number: int) -> bytes:
    payload = segment.payload
    if len(payload) < 8 + (8 if number > 1 else 0):
        raise CorruptMedia("a C2PA APP11 segment is truncated")
    if int.from_bytes(payload[4:8], "big") != number:
        raise CorruptMedia("the C2PA APP11 segments are out of order")
    return payload[8:] if number == 1 else payload[16:]


class PngCarrier:
    mime_type = "image/png"

    def find(self, data: bytes) -> Found | None:
        """The C2PA store in the `caBX` chunk, or None. Raises CodecError for a bad PNG or store."""
        chunks, _ = png.parse_chunks(data)
        offset = len(png.SIGNATURE)
        found = None
        for chunk in chunks:
            if chunk.type == CHUNK_TYPE:
                if found is not None:
                    raise CorruptMedia("the PNG has two C2PA manifest stores")
                if len(chunk.raw) - 12 > MAX_STORE_BYTES:
                    raise MediaTooLarge("the C2PA manifest store is larger than 32 MB")
                found = Found(chunk.data, offset, len(chunk.raw))
            offset += len(chunk.raw)
        return found

    def strip(self, data: bytes) -> bytes:
        chunks, trailer = png.parse_chunks(data)
        kept = [chunk for chunk in chunks if chunk.type != CHUNK_TYPE]
        return data if len(kept) == len(chunks) else png.assemble(kept, trailer)

    def insert_offset(self, stripped: bytes) -> int:
        """Before the first IDAT (or fcTL), as the spec recommends (C2PA 2.2 Appendix A.3)."""
        chunks, _ = png.parse_chunks(stripped)
        offset = len(png.SIGNATURE)
        for chunk in chunks:
            if chunk.type in (b"IDAT", b"fcTL"):
                return offset
            offset += len(chunk.raw)
        raise CorruptMedia("the PNG has no IDAT chunk")

    def wrapped(self, store: bytes) -> bytes:
        if len(store) > MAX_STORE_BYTES:
            raise MediaTooLarge("the C2PA manifest store is larger than 32 MB")
        return bytes(png.make_chunk(CHUNK_TYPE, store).raw)

    def wrapped_size(self, store_size: int) -> int:
        return store_size + 12


JPEG_CARRIER = JpegCarrier()
PNG_CARRIER = PngCarrier()


def carrier_for(data: bytes) -> Carrier:
    """The carrier of the file's format (`Codec.c2pa_carrier`). Raises UnsupportedFormat for a format
    that carries no store."""
    try:
        carrier = detect(data).c2pa_carrier
    except UnsupportedFormat:
        carrier = None
    if carrier is None:
        raise UnsupportedFormat("C2PA manifests are embedded in JPEG and PNG files only")
    return carrier


def splice(stripped: bytes, offset: int, wrapped: bytes) -> bytes:
    """Insert the wrapped store at `offset` of the stripped file."""
    return b"".join((stripped[:offset], wrapped, stripped[offset:]))
