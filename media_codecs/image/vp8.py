"""The quantiser of a lossy WebP's VP8 key frame, to re-encode it at about its own quality.

RFC 6386: the first partition after the 10-byte key-frame header is boolean-coded (section 7.3);
its frame header (section 19.2) carries the segment quantisers (absolute or deltas) and the base
quantiser index `y_ac_qi`, 0 (finest) to 127. libwebp derives each segment's index from the
quality as `127 * (1 - c ** expn)`, where `c = QualityToCompression(quality / 100)` and `expn`
leans on the segment's texture (src/enc/quant_enc.c); `estimated_quality` inverts that for the
mean segment, which lands within a few points of the quality the file was written at.
"""

from __future__ import annotations

_KEY_FRAME_HEADER = 10  # frame tag (3), start code (3), width and height (4)
HEADER_BYTES = _KEY_FRAME_HEADER + 64  # enough for the frame header's fields up to the quantisers
_MAX_Q = 127


class _BoolDecoder:
    """RFC 6386 section 7.3, reading past the end as zeros (a truncated header decodes to garbage, not an error)."""

    def __init__(self, data: bytes):
        self.data, self.position = data, 2
        self.value = int.from_bytes(data[:2].ljust(2, b"\x00"), "big")
        self.range, self.bit_count = 255, 0

    def bit(self, probability: int = 128) -> int:
        split = 1 + (((self.range - 1) * probability) >> 8)
        if self.value >= split << 8:
            bit, self.range, self.value = 1, self.range - split, self.value - (split << 8)
        else:
            bit, self.range = 0, split
        while self.range < 128:
            self.value, self.range = self.value << 1, self.range << 1
            self.bit_count += 1
            if self.bit_count == 8:
                self.bit_count = 0
                if self.position < len(self.data):
                    self.value |= self.data[self.position]
                self.position += 1
        return bit

    def literal(self, bits: int) -> int:
        value = 0
        for _ in range(bits):
            value = (value << 1) | self.bit()
        return value

    def signed(self, bits: int) -> int:
        magnitude = self.literal(bits)
        return -magnitude if self.bit() else magnitude

    def optional_signed(self, bits: int) -> int:
        return self.signed(bits) if self.bit() else 0


def segment_quantisers(vp8_payload: bytes) -> list[int]:
    """The quantiser index of each segment of a key frame (one value without segmentation).

    Raises ValueError for a payload that is not a VP8 key frame.
    """
    if len(vp8_payload) < _KEY_FRAME_HEADER + 2 or vp8_payload[0] & 1 or vp8_payload[3:6] != b"\x9d\x01\x2a":
        raise ValueError("not a VP8 key frame")
    decoder = _BoolDecoder(bytes(vp8_payload[_KEY_FRAME_HEADER:HEADER_BYTES]))
    decoder.literal(2)  # colour space, clamping type
    segments: list[int] | None = None
    is_absolute = False
    if decoder.bit():  # segmentation enabled
        updates_map, updates_data = decoder.bit(), decoder.bit()
        if updates_data:
            is_absolute = bool(decoder.bit())
            segments = [decoder.optional_signed(7) for _ in range(4)]
            for _ in range(4):
                decoder.optional_signed(6)  # loop filter level per segment
        if updates_map:
            for _ in range(3):
                if decoder.bit():
                    decoder.literal(8)
    decoder.literal(1 + 6 + 3)  # filter type, loop filter level, sharpness
    if decoder.bit() and decoder.bit():  # loop filter deltas enabled and updated
        for _ in range(8):
            decoder.optional_signed(6)
    decoder.literal(2)  # DCT partitions
    base = decoder.literal(7)
    if segments is None:
        return [base]
    return [_clamp(value if is_absolute else base + value) for value in segments]


def estimated_quality(vp8_payload: bytes) -> int:
    """The libwebp quality (0-100) a key frame was most likely encoded at. Raises ValueError."""
    quantisers = segment_quantisers(vp8_payload)
    compression = 1.0 - sum(quantisers) / len(quantisers) / _MAX_Q
    linear = compression**3  # QualityToCompression is the cube root of a piecewise-linear map
    quality = 1.5 * linear if linear < 0.5 else (linear + 1.0) / 2.0
    return max(0, min(100, round(quality * 100)))


def _clamp(value: int) -> int:
    return max(0, min(_MAX_Q, value))
