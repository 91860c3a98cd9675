"""EBML (Matroska, WebM): the element reader and what the headers declare, read without decoding.

An element is an ID (a variable-length integer of 1 to 4 bytes, marker bits kept), a size (1 to 8
bytes, marker removed) and its data (RFC 8794, 4 and 6). The walker reads the top level (EBML header,
Segment, anything after it), the Segment's children without entering Clusters, and the path
Segment > Info and Segment > Tracks > TrackEntry > Video; nothing else is read.

Limits, checked here: every size must fit in its parent (sizes that lie are CorruptMedia); an
element of unknown size (all size bits set, which live WebM recorders write) is UnsupportedFormat,
because nothing after it can be found without parsing every Cluster: remux such files first. At
most MAX_TOP_LEVEL top-level elements and MAX_SEGMENT_CHILDREN Segment children (MediaTooLarge). The
EBML header must declare EBMLReadVersion 1 and IDs and sizes of at most 4 and 8 bytes; exactly one
Segment; Info must declare a Duration (a file without one cannot be checked against the limit).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from media_codecs.errors import CorruptMedia, MediaTooLarge, UnsupportedFormat
from media_codecs.video.limits import TrackInfo, VideoInfo

EBML_ID = 0x1A45DFA3
SEGMENT_ID = 0x18538067
VOID_ID = 0xEC
_DOC_TYPE, _READ_VERSION, _MAX_ID_LENGTH, _MAX_SIZE_LENGTH = 0x4282, 0x42F7, 0x42F2, 0x42F3
_INFO, _TIMESTAMP_SCALE, _DURATION = 0x1549A966, 0x2AD7B1, 0x4489
_TRACKS, _TRACK_ENTRY, _TRACK_TYPE, _VIDEO, _PIXEL_WIDTH, _PIXEL_HEIGHT = 0x1654AE6B, 0xAE, 0x83, 0xE0, 0xB0, 0xBA
_TRACK_KINDS = {1: "video", 2: "audio"}
MAX_TOP_LEVEL = 64
MAX_SEGMENT_CHILDREN = 20_000
MAX_CHILDREN = 4_096  # in an Info, Tracks, TrackEntry or Video element


@dataclass(frozen=True)
class Element:
    id: int
    start: int  # offset of the ID
    data_start: int
    end: int


@dataclass(frozen=True)
class MatroskaFile:
    elements: tuple[Element, ...]  # the top level
    doc_type: str
    info: VideoInfo


def read_id(data: bytes | memoryview, position: int, end: int) -> tuple[int, int]:
    """An element ID with its marker bits, and the position after it. Raises CorruptMedia."""
    length = _vint_length(data, position, end, 4)
    return int.from_bytes(data[position : position + length], "big"), position + length


def read_size(data: bytes | memoryview, position: int, end: int) -> tuple[int | None, int]:
    """An element size (None when unknown: every value bit set), and the position after it."""
    length = _vint_length(data, position, end, 8)
    value = int.from_bytes(data[position : position + length], "big") & ((1 << (7 * length)) - 1)
    return (None if value == (1 << (7 * length)) - 1 else value), position + length


def _vint_length(data: bytes | memoryview, position: int, end: int, longest: int) -> int:
    if position >= end:
        raise CorruptMedia("an EBML element header is truncated")
    first = data[position]
    length = 9 - first.bit_length() if first else 9
    if length > longest:
        raise CorruptMedia("an EBML variable-length integer is longer than allowed")
    if position + length > end:
        raise CorruptMedia("an EBML element header is truncated")
    return length


def read_elements(data: bytes | memoryview, start: int, end: int, limit: int) -> list[Element]:
    """The elements laid end to end in data[start:end]. Raises CorruptMedia, UnsupportedFormat, MediaTooLarge."""
    elements: list[Element] = []
    position = start
    while position < end:
        if len(elements) >= limit:
            raise MediaTooLarge(f"an EBML element holds more than {limit} elements")
        element_id, after_id = read_id(data, position, end)
        size, data_start = read_size(data, after_id, end)
        if size is None:
            raise UnsupportedFormat("an EBML element of unknown size (a live recording?) is not supported; "
                                    "remux the file")
        if size > end - data_start:
            raise CorruptMedia(f"the EBML element 0x{element_id:X} declares {size:,} bytes, more than are left")
        elements.append(Element(element_id, position, data_start, data_start + size))
        position = data_start + size
    return elements


def children(data: bytes | memoryview, element: Element, limit: int = MAX_CHILDREN) -> list[Element]:
    return read_elements(data, element.data_start, element.end, limit)


def _unsigned(data: bytes | memoryview, element: Element) -> int:
    if element.end - element.data_start > 8:
        raise CorruptMedia("an EBML unsigned integer is longer than 8 bytes")
    return int.from_bytes(data[element.data_start : element.end], "big")


def _float(data: bytes | memoryview, element: Element) -> float:
    raw = bytes(data[element.data_start : element.end])
    if len(raw) not in (0, 4, 8):
        raise CorruptMedia("an EBML float is not 0, 4 or 8 bytes")
    return struct.unpack(">f" if len(raw) == 4 else ">d", raw)[0] if raw else 0.0


def _first(elements: list[Element], element_id: int) -> Element | None:
    return next((element for element in elements if element.id == element_id), None)


def header_doc_type(data: bytes | memoryview, header: Element) -> str:
    """The EBML header's DocType, after checking the versions it declares. Raises CorruptMedia, UnsupportedFormat."""
    fields = {element.id: element for element in children(data, header)}
    for field_id, most in ((_READ_VERSION, 1), (_MAX_ID_LENGTH, 4), (_MAX_SIZE_LENGTH, 8)):
        if field_id in fields and _unsigned(data, fields[field_id]) > most:
            raise UnsupportedFormat("the EBML header declares a version or lengths this reader does not know")
    if _DOC_TYPE not in fields:
        raise CorruptMedia("the EBML header declares no DocType")
    doc_type = fields[_DOC_TYPE]
    return bytes(data[doc_type.data_start : doc_type.end]).rstrip(b"\x00").decode("ascii", "replace")


def parse_matroska(data: bytes) -> MatroskaFile:
    """Walk the top level, the Segment, Info and Tracks. Raises UnsupportedFormat, CorruptMedia, MediaTooLarge."""
    if not data.startswith(EBML_ID.to_bytes(4, "big")):
        raise UnsupportedFormat("not an EBML file")
    top = read_elements(data, 0, len(data), MAX_TOP_LEVEL)
    if top[0].id != EBML_ID:
        raise UnsupportedFormat("not an EBML file")
    segments = [element for element in top if element.id == SEGMENT_ID]
    if len(segments) != 1:
        raise UnsupportedFormat(f"the file has {len(segments)} Segments, not one")
    segment = children(data, segments[0], MAX_SEGMENT_CHILDREN)
    info, tracks = _first(segment, _INFO), _first(segment, _TRACKS)
    if info is None or tracks is None:
        raise CorruptMedia("the Segment has no Info or no Tracks")
    seconds = _duration(data, info)
    entries = [_track(data, entry) for entry in children(data, tracks) if entry.id == _TRACK_ENTRY]
    return MatroskaFile(tuple(top), header_doc_type(data, top[0]), VideoInfo(tuple(entries), seconds))


def _duration(data: bytes, info: Element) -> float:
    fields = children(data, info)
    scale = _first(fields, _TIMESTAMP_SCALE)
    duration = _first(fields, _DURATION)
    if duration is None:
        raise UnsupportedFormat("the Matroska Info declares no Duration; remux the file")
    nanoseconds_per_tick = _unsigned(data, scale) if scale is not None else 1_000_000
    return _float(data, duration) * nanoseconds_per_tick / 1e9


def _track(data: bytes, entry: Element) -> TrackInfo:
    fields = children(data, entry)
    kind_field = _first(fields, _TRACK_TYPE)
    kind = _TRACK_KINDS.get(_unsigned(data, kind_field) if kind_field else 0, "other")
    video = _first(fields, _VIDEO)
    if kind != "video" or video is None:
        return TrackInfo(kind)
    picture = children(data, video)
    width, height = _first(picture, _PIXEL_WIDTH), _first(picture, _PIXEL_HEIGHT)
    return TrackInfo(kind, _unsigned(data, width) if width else 0, _unsigned(data, height) if height else 0)
