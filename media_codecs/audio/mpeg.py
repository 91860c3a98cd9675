"""MPEG audio Layer III frame headers, the Xing/Info and VBRI headers, and a bounded frame scan.

Enough to recognise MP3 audio without decoding it (ISO/IEC 11172-3 and 13818-3, MPEG 2.5 as
the de facto extension): a frame header is valid only with a known version, Layer III, a bitrate
index other than free (0) and bad (15), a known sample rate and a defined emphasis; a stream is
claimed only where a second valid header sits exactly where the first frame ends.

Duration: the larger of the Xing/Info or VBRI header's frame count (when there is one) and the
count from walking at most MAX_SCAN_FRAMES frame headers, extrapolated over the remaining bytes
when the walk stops at that bound (a walk stopped by other bytes counts what it found). A header
that declares fewer frames than the walk finds (beyond 1%, or 10% of an extrapolated count) lies
about its payload: CorruptMedia.
"""

from __future__ import annotations

from dataclasses import dataclass

from media_codecs.errors import CorruptMedia, UnsupportedFormat

STEREO, JOINT_STEREO, DUAL_CHANNEL, MONO = 0, 1, 2, 3
MAX_SCAN_FRAMES = 16_384  # about seven minutes at 44.1 kHz: a few milliseconds of header reads
SYNC_WINDOW = 64 * 1024  # how far past the tags we look for the first frame
_BITRATES_KBPS = {
    True: (0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320),  # MPEG-1 Layer III
    False: (0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160),  # MPEG-2 and 2.5 Layer III
}
_SAMPLE_RATES = {3: (44100, 48000, 32000), 2: (22050, 24000, 16000), 0: (11025, 12000, 8000)}
_OTHER_LAYERS = (2, 3)  # layer bits of Layer II and Layer I


@dataclass(frozen=True)
class FrameHeader:
    is_mpeg1: bool
    bitrate: int  # bits per second
    sample_rate: int
    mode: int
    length: int  # bytes, header included

    @property
    def samples(self) -> int:
        return 1152 if self.is_mpeg1 else 576

    @property
    def channels(self) -> int:
        return 1 if self.mode == MONO else 2

    @property
    def side_info_bytes(self) -> int:
        if self.is_mpeg1:
            return 17 if self.mode == MONO else 32
        return 9 if self.mode == MONO else 17


@dataclass(frozen=True)
class Stream:
    first: FrameHeader  # the first audio frame (after any Xing/Info frame)
    frames: int  # samples per channel, declared or estimated
    is_vbr: bool


def frame_header(data: bytes | memoryview, position: int) -> FrameHeader | None:
    """The Layer III frame header at `position`, or None when there is none."""
    if position < 0 or position + 4 > len(data):
        return None
    bits = int.from_bytes(data[position : position + 4], "big")
    version, layer = bits >> 19 & 3, bits >> 17 & 3
    bitrate_index, rate_index = bits >> 12 & 15, bits >> 10 & 3
    if bits >> 21 != 0x7FF or version == 1 or layer != 1 or bitrate_index in (0, 15) or rate_index == 3:
        return None
    if bits & 3 == 2:  # reserved emphasis
        return None
    is_mpeg1 = version == 3
    bitrate = _BITRATES_KBPS[is_mpeg1][bitrate_index] * 1000
    rate = _SAMPLE_RATES[version][rate_index]
    length = (144 if is_mpeg1 else 72) * bitrate // rate + (bits >> 9 & 1)
    return FrameHeader(is_mpeg1, bitrate, rate, bits >> 6 & 3, length)


def is_other_layer(data: bytes | memoryview, position: int) -> bool:
    """Whether a Layer I or II frame sync sits at `position` (MPEG audio we do not handle)."""
    bits = int.from_bytes(data[position : position + 4], "big") if position + 4 <= len(data) else 0
    return bits >> 21 == 0x7FF and bits >> 19 & 3 != 1 and bits >> 17 & 3 in _OTHER_LAYERS


def starts_stream(data: bytes | memoryview, position: int) -> bool:
    """Whether two consecutive valid frames, with the same version and rate, start at `position`."""
    first = frame_header(data, position)
    if first is None:
        return False
    second = frame_header(data, position + first.length)
    return second is not None and (second.is_mpeg1, second.sample_rate) == (first.is_mpeg1, first.sample_rate)


def find_stream(data: bytes | memoryview, start: int) -> int:
    """The position of the first frame of a stream within SYNC_WINDOW bytes of `start`.

    Raises UnsupportedFormat for Layer I/II audio, CorruptMedia when there is no stream.
    """
    window = bytes(data[start : start + SYNC_WINDOW])
    offset = window.find(b"\xff")
    while offset >= 0:
        if starts_stream(data, start + offset):
            return start + offset
        if is_other_layer(data, start + offset):
            raise UnsupportedFormat("MPEG audio Layer I and II are not supported; only MP3 (Layer III)")
        offset = window.find(b"\xff", offset + 1)
    raise CorruptMedia("no MPEG audio frames follow the tags")


def read_stream(data: bytes | memoryview, position: int, audio_end: int) -> Stream:
    """Describe the stream starting at `position` (checked by `find_stream`), without decoding.

    Raises CorruptMedia when the stream holds no audio frame.
    """
    header = frame_header(data, position)
    declared, is_vbr, has_info = _info_frame(data, position, header)
    first_audio = position + header.length if has_info else position
    first = frame_header(data, first_audio)
    if first is None:
        raise CorruptMedia("the MP3 holds no audio frame")
    frames, reached, bitrates = _scan(data, first_audio, audio_end)
    estimated = frames >= MAX_SCAN_FRAMES and reached < audio_end
    if estimated:  # stopped by the bound: extrapolate
        frames = frames * (audio_end - first_audio) // (reached - first_audio)
    if declared and frames > declared + max(2, declared // (10 if estimated else 100)):
        # An info frame that understates the frames present would have them dropped, or not counted:
        # refused. One that overstates them is a cut file, read as the frames it holds.
        raise CorruptMedia(f"the MP3 holds {frames:,} frames{' (estimated)' if estimated else ''}, more than "
                           f"the {declared:,} its Xing/Info/VBRI header declares")
    # An info frame may understate (a hostile one would): the larger count is the one the limits see.
    return Stream(first, max(declared, frames) * first.samples, is_vbr or len(bitrates) > 1)


def _info_frame(data: bytes | memoryview, position: int, header: FrameHeader) -> tuple[int, bool, bool]:
    """(frame count or 0, is VBR, is an info frame) from a Xing/Info or VBRI header in the first frame."""
    offset = position + 4 + header.side_info_bytes
    tag = bytes(data[offset : offset + 4])
    if tag in (b"Xing", b"Info"):
        flags = int.from_bytes(data[offset + 4 : offset + 8], "big")
        frames = int.from_bytes(data[offset + 8 : offset + 12], "big") if flags & 1 else 0
        return frames, tag == b"Xing", True
    if bytes(data[position + 36 : position + 40]) == b"VBRI":  # Fraunhofer: 32 bytes after the header
        return int.from_bytes(data[position + 50 : position + 54], "big"), True, True
    return 0, False, False


def _scan(data: bytes | memoryview, position: int, end: int) -> tuple[int, int, set[int]]:
    """Walk up to MAX_SCAN_FRAMES frame headers: (frames, where the walk stopped, bitrates seen)."""
    frames, bitrates = 0, set()
    while frames < MAX_SCAN_FRAMES:
        header = frame_header(data, position)
        if header is None or position + header.length > end:
            break
        frames += 1
        bitrates.add(header.bitrate)
        position += header.length
    return frames, position, bitrates


def trailer_length(data: bytes | memoryview) -> int:
    """Bytes of an ID3v1 tag and an APEv2 tag before it at the end of the file (0 without them)."""
    length = 128 if len(data) >= 128 and bytes(data[-128:-125]) == b"TAG" else 0
    footer = len(data) - length - 32
    if footer >= 0 and bytes(data[footer : footer + 8]) == b"APETAGEX":
        size = int.from_bytes(data[footer + 12 : footer + 16], "little")  # items and footer
        has_header = int.from_bytes(data[footer + 20 : footer + 24], "little") >> 31
        ape = size + 32 * has_header
        if ape <= footer + 32:
            length += ape
    return length
