"""JPEG: the store travels in consecutive APP11 (JPEG XT) segments after the leading APP0 (docs/c2pa-notes,
section 1), sliced as c2pa-rs slices it."""

from __future__ import annotations

from media_codecs.c2pa.carriers.base import Carrier, Found
from media_codecs.errors import CorruptMedia, MediaTooLarge
from media_codecs.image import jpeg

_APP0 = 0xE0
_BOX_INSTANCE = b"\x02\x11"  # the En c2pa-rs writes; the same in every segment of the store
SLICE_BYTES = 64_000  # store bytes per APP11 segment, as c2pa-rs slices


class JpegCarrier(Carrier):
    mime_type = "image/jpeg"

    def find(self, data: bytes) -> Found | None:
        """The C2PA store in the APP11 segments, or None. Raises CodecError for a bad JPEG or store."""
        segments, _ = jpeg.parse_header(data)
        offset, found, pieces, start, length, size = 2, None, [], 0, 0, 0
        for segment in segments:
            if found is None and segment.starts_c2pa_store:
                found, start = segment.payload[2:4], offset
            if found is not None and segment.continues_c2pa_store(found):
                pieces.append(_slice(segment, len(pieces) + 1))
                length += len(segment.raw)
                size += len(pieces[-1])
                if size > 32 * 1024 * 1024:
                    raise MediaTooLarge("the C2PA manifest store is larger than 32 MB")
            offset += len(segment.raw)
        if found is None:
            return None
        return Found(b"".join(pieces), start, length)

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
        self.check_store_size(len(store))
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


JPEG_CARRIER = JpegCarrier()
