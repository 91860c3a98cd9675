"""ISO BMFF (MP4, QuickTime): the box walker and what the headers declare, read without decoding.

A box is `size` (u32, big-endian, header included) + `type` (4 bytes) + payload; `size` 1 means a
u64 `largesize` follows the type, `size` 0 means "to the end of the file" (allowed only for the
last top-level box). A `uuid` box has 16 more header bytes (ISO/IEC 14496-12, 4.2).

Limits, checked here: every size must fit in its parent (a box claiming 2^64 bytes, or more than is
left, is CorruptMedia); at most MAX_TOP_LEVEL_BOXES top-level boxes and MAX_MOOV_BOXES boxes inside
`moov`, nested at most MAX_DEPTH containers deep; exactly one `moov`, at least one `mdat`. Fragmented
files (`moof`, or `mvex` in `moov`) are UnsupportedFormat: their duration is spread over fragments.
The total sample count of the tracks (from `stsz`/`stz2` headers) is bounded by MAX_SAMPLES, because
FFmpeg's demuxer builds an index entry per sample before the first frame is read.
"""

from __future__ import annotations

import array
import operator
import sys
from dataclasses import dataclass

from media_codecs.errors import CorruptMedia, MediaTooLarge, UnsupportedFormat
from media_codecs.video.limits import MAX_SAMPLES, TrackInfo, VideoInfo

MAX_TOP_LEVEL_BOXES = 4_096
MAX_MOOV_BOXES = 20_000
MAX_DEPTH = 8  # moov/trak/mdia/minf/stbl is 5 deep
# Containers the walker descends into: the path to the track headers, nothing else.
CONTAINERS = frozenset({b"moov", b"trak", b"mdia", b"minf", b"stbl", b"edts", b"mvex"})
_HEADER, _LARGE_HEADER = 8, 16


@dataclass(frozen=True)
class Box:
    type: bytes
    start: int  # offset of the size field
    end: int
    header: int  # header length: 8, 16 (largesize) or 24 (uuid)
    declared_to_end: bool = False  # size 0: "to the end of the file"

    @property
    def payload_start(self) -> int:
        return self.start + self.header


def read_boxes(data: bytes | memoryview, start: int, end: int, *, top_level: bool, limit: int) -> list[Box]:
    """The boxes laid end to end in data[start:end]. Raises CorruptMedia, MediaTooLarge past `limit`."""
    boxes: list[Box] = []
    position = start
    while position < end:
        if len(boxes) >= limit:
            raise MediaTooLarge(f"the file has more than {limit} boxes at one level")
        box = _read_box(data, position, end, top_level=top_level)
        boxes.append(box)
        position = box.end
    return boxes


def _read_box(data: bytes | memoryview, position: int, end: int, *, top_level: bool) -> Box:
    if end - position < _HEADER:
        raise CorruptMedia("a box header is truncated")
    size = int.from_bytes(data[position : position + 4], "big")
    kind = bytes(data[position + 4 : position + 8])
    header, to_end = _HEADER, False
    if size == 1:
        if end - position < _LARGE_HEADER:
            raise CorruptMedia("a box's 64-bit size is truncated")
        size, header = int.from_bytes(data[position + 8 : position + 16], "big"), _LARGE_HEADER
    elif size == 0:
        if not top_level:
            raise CorruptMedia(f"the nested box {kind!r} declares size 0")
        size, to_end = end - position, True
    if kind == b"uuid":
        header += 16
    if size < header:
        raise CorruptMedia(f"the box {kind!r} declares {size} bytes, less than its header")
    if size > end - position:
        raise CorruptMedia(f"the box {kind!r} declares {size:,} bytes, more than the {end - position:,} left")
    return Box(kind, position, position + size, header, to_end)


def find(boxes: list[Box], kind: bytes) -> list[Box]:
    return [box for box in boxes if box.type == kind]


@dataclass(frozen=True)
class Movie:
    """The top-level boxes of a file and what `moov` declares."""

    boxes: tuple[Box, ...]
    info: VideoInfo


def parse_movie(data: bytes) -> Movie:
    """Walk the top level and `moov`. Raises UnsupportedFormat, CorruptMedia, MediaTooLarge."""
    if data[4:8] != b"ftyp":
        raise UnsupportedFormat("an ISO BMFF file must start with an ftyp box")
    boxes = read_boxes(data, 0, len(data), top_level=True, limit=MAX_TOP_LEVEL_BOXES)
    if boxes[0].type != b"ftyp":
        raise UnsupportedFormat("an ISO BMFF file must start with an ftyp box")
    if find(boxes, b"moof"):
        raise UnsupportedFormat("fragmented MP4 (moof) is not supported; remux it as a regular MP4")
    movies = find(boxes, b"moov")
    if len(movies) != 1:
        raise CorruptMedia(f"the file has {len(movies)} moov boxes, not one")
    if not find(boxes, b"mdat"):
        raise CorruptMedia("the file has no mdat box: no media data")
    return Movie(tuple(boxes), _movie_info(data, movies[0]))


def _movie_info(data: bytes, moov: Box) -> VideoInfo:
    counter = [0]
    children = _children(data, moov, depth=1, counter=counter)
    if find(children, b"mvex"):
        raise UnsupportedFormat("fragmented MP4 (mvex) is not supported; remux it as a regular MP4")
    headers = find(children, b"mvhd")
    if len(headers) != 1:
        raise CorruptMedia("moov must hold exactly one mvhd box")
    seconds = _duration_seconds(data, headers[0])
    tracks = [_track(data, trak, counter) for trak in find(children, b"trak")]
    if sum(track.samples for track in tracks) > MAX_SAMPLES:
        raise MediaTooLarge(f"the tracks declare more than {MAX_SAMPLES:,} samples")
    return VideoInfo(tuple(tracks), max([seconds, *(track.seconds for track in tracks)]))


def _children(data: bytes, box: Box, *, depth: int, counter: list[int]) -> list[Box]:
    """The boxes inside a container, descending into CONTAINERS; counts them against MAX_MOOV_BOXES."""
    if depth > MAX_DEPTH:
        raise CorruptMedia(f"boxes are nested more than {MAX_DEPTH} deep")
    boxes = read_boxes(data, box.payload_start, box.end, top_level=False, limit=MAX_MOOV_BOXES)
    counter[0] += len(boxes)
    if counter[0] > MAX_MOOV_BOXES:
        raise MediaTooLarge(f"moov holds more than {MAX_MOOV_BOXES} boxes")
    for child in boxes:
        if child.type in CONTAINERS:
            _children(data, child, depth=depth + 1, counter=counter)  # checked, then read again where needed
    return boxes


def _only(data: bytes, parent: Box, path: tuple[bytes, ...]) -> Box | None:
    """The first box along `path` below `parent` (already validated by _children), or None."""
    box = parent
    for kind in path:
        found = find(read_boxes(data, box.payload_start, box.end, top_level=False, limit=MAX_MOOV_BOXES), kind)
        if not found:
            return None
        box = found[0]
    return box


def _payload(data: bytes, box: Box, length: int) -> bytes:
    payload = data[box.payload_start : min(box.end, box.payload_start + length)]
    if len(payload) < length:
        raise CorruptMedia(f"the {box.type.decode('latin-1')} box is truncated")
    return payload


def _duration_seconds(data: bytes, header: Box) -> float:
    timescale, duration = _clock(data, header)
    return duration / timescale


def _clock(data: bytes, header: Box) -> tuple[int, int]:
    """mvhd/mdhd (version 0: u32 timescale and duration at 12; version 1: at 20, u64 duration)."""
    version = _payload(data, header, 1)[0]
    if version == 1:
        payload = _payload(data, header, 32)
        timescale, duration = int.from_bytes(payload[20:24], "big"), int.from_bytes(payload[24:32], "big")
    else:
        payload = _payload(data, header, 20)
        timescale, duration = int.from_bytes(payload[12:16], "big"), int.from_bytes(payload[16:20], "big")
    if timescale == 0:
        raise CorruptMedia("a movie or media header declares a timescale of 0")
    return timescale, duration


def _check_sample_times(data: bytes, trak: Box, media_header: Box) -> None:
    """Refuse a media header that declares a shorter duration than its samples' durations (stts) add up
    to: the duration limit would be checked on the lie. Longer than them is an edit's or a cut's gap."""
    times = _only(data, trak, (b"mdia", b"minf", b"stbl", b"stts"))
    if times is None:
        return
    count = int.from_bytes(_payload(data, times, 8)[4:8], "big")
    table = array.array("I", data[times.payload_start + 8 : min(times.end, times.payload_start + 8 + 8 * count)])
    if len(table) != 2 * count:
        raise CorruptMedia("the stts box is truncated")
    if sys.byteorder == "little":
        table.byteswap()
    total = sum(map(operator.mul, table[0::2], table[1::2]))
    timescale, duration = _clock(data, media_header)
    if total > duration + max(timescale, duration // 100):  # a second, or 1%
        raise CorruptMedia(f"a track's samples last {total / timescale:,.1f} s, more than the "
                           f"{duration / timescale:,.1f} s its media header declares")


def _track(data: bytes, trak: Box, counter: list[int]) -> TrackInfo:
    mdia = _only(data, trak, (b"mdia",))
    handler = _only(data, trak, (b"mdia", b"hdlr"))
    media_header = _only(data, trak, (b"mdia", b"mdhd"))
    if mdia is None or handler is None or media_header is None:
        raise CorruptMedia("a track has no mdia, hdlr or mdhd box")
    kind = {b"vide": "video", b"soun": "audio"}.get(_payload(data, handler, 12)[8:12], "other")
    width = height = 0
    entry = _first_sample_entry(data, trak)
    if kind == "video":
        if entry is None:
            raise CorruptMedia("a video track has no sample description")
        width, height = int.from_bytes(entry[32:34], "big"), int.from_bytes(entry[34:36], "big")
    _check_sample_times(data, trak, media_header)
    return TrackInfo(kind, width, height, _duration_seconds(data, media_header), _sample_count(data, trak))


def _first_sample_entry(data: bytes, trak: Box) -> bytes | None:
    """The first entry of stsd (FullBox header, u32 count, then sample entries), at least 36 bytes."""
    stsd = _only(data, trak, (b"mdia", b"minf", b"stbl", b"stsd"))
    if stsd is None:
        return None
    entries = read_boxes(data, stsd.payload_start + 8, stsd.end, top_level=False, limit=MAX_MOOV_BOXES)
    if not entries:
        return None
    entry = data[entries[0].start : entries[0].end]
    if len(entry) < 36:
        raise CorruptMedia("a visual sample entry is truncated")
    return entry


def _sample_count(data: bytes, trak: Box) -> int:
    sizes = _only(data, trak, (b"mdia", b"minf", b"stbl", b"stsz"))
    if sizes is not None:
        return int.from_bytes(_payload(data, sizes, 12)[8:12], "big")
    compact = _only(data, trak, (b"mdia", b"minf", b"stbl", b"stz2"))
    return int.from_bytes(_payload(data, compact, 12)[8:12], "big") if compact is not None else 0
