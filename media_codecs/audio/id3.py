"""ID3v2.3 and v2.4 tags at the start of a file, as a list of frames kept byte for byte.

Only what token surgery needs (id3.org, "ID3 tag version 2.4.0 - Main Structure" and the v2.3.0
informal standard): the tag header, the extended header and the frames are kept as read; what
follows the last frame (padding, or bytes that do not parse as frames) is kept as `padding`.
A v2.3 tag with the tag-wide unsynchronisation flag is read with the scheme undone and written
without it (the frames are the same; only their escaping goes). A v2.4 tag whose frame sizes
are not sync-safe (an old iTunes bug) is read with plain sizes when that parses further.
ID3v2.2 (three-letter frame ids) is UnsupportedFormat.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from media_codecs.errors import CorruptMedia, MediaTooLarge, UnsupportedFormat

HEADER_BYTES = 10
MAX_FRAMES = 4_096  # a well-tagged song has a few dozen
# A C2PA manifest store travels in a GEOB frame of one of these MIME types (c2pa-rs id3_helper.rs; the
# second is the older name), with the file name and description c2pa-rs writes.
C2PA_MIME_TYPES = (b"application/c2pa", b"application/x-c2pa-manifest-store")
C2PA_FILE_NAME, C2PA_DESCRIPTION = b"c2pa", b"c2pa manifest store"
_UNSYNCHRONISED, _EXTENDED, _FOOTER = 0x80, 0x40, 0x10
_ENCODINGS = {0: "latin-1", 1: "utf-16", 2: "utf-16-be", 3: "utf-8"}


@dataclass(frozen=True)
class Frame:
    id: bytes
    raw: bytes | memoryview  # header (id, size, flags) and data as read

    @property
    def flags(self) -> int:
        return int.from_bytes(self.raw[8:10], "big")

    @property
    def data(self) -> bytes:
        return bytes(self.raw[HEADER_BYTES:])


@dataclass(frozen=True)
class Tag:
    version: int  # 3 or 4
    revision: int
    flags: int
    extended: bytes  # the extended header as read (empty without one)
    frames: tuple[Frame, ...]
    padding: bytes | memoryview


def tag_length(head: bytes) -> int | None:
    """The total length of the ID3v2 tag `head` starts with (header, body, footer), or None."""
    if len(head) < HEADER_BYTES or head[:3] != b"ID3" or head[3] not in (2, 3, 4) or head[4] == 0xFF:
        return None
    if any(byte & 0x80 for byte in head[6:10]):
        return None
    footer = HEADER_BYTES if head[3] == 4 and head[5] & _FOOTER else 0
    return HEADER_BYTES + _syncsafe(head[6:10]) + footer


def parse_tag(data: bytes | memoryview) -> Tag:
    """Read the ID3v2 tag at the start of `data` (which holds the whole tag).

    Raises UnsupportedFormat for ID3v2.2, CorruptMedia for a malformed tag, MediaTooLarge past MAX_FRAMES.
    """
    length = tag_length(bytes(data[:HEADER_BYTES]))
    if length is None or length > len(data):
        raise CorruptMedia("the ID3v2 tag is malformed or runs past the end of the file")
    version, flags = data[3], data[5]
    if version == 2:
        raise UnsupportedFormat("ID3v2.2 tags are not supported; re-tag the file as ID3v2.3 or v2.4")
    body = bytes(data[HEADER_BYTES : HEADER_BYTES + _syncsafe(bytes(data[6:10]))])
    if version == 3 and flags & _UNSYNCHRONISED:
        body, flags = body.replace(b"\xff\x00", b"\xff"), flags & ~_UNSYNCHRONISED
    extended_length = _extended_length(body, version) if flags & _EXTENDED else 0
    frames, end = _best_frames(body, extended_length, version)
    return Tag(version, data[4], flags, body[:extended_length], frames, body[end:])


def _extended_length(body: bytes, version: int) -> int:
    if len(body) < 6:
        raise CorruptMedia("the ID3v2 extended header is truncated")
    # v2.4: a sync-safe size that counts itself; v2.3: a plain size that does not.
    length = _syncsafe(body[:4]) if version == 4 else 4 + int.from_bytes(body[:4], "big")
    if length > len(body):
        raise CorruptMedia("the ID3v2 extended header runs past the tag")
    return length


def _best_frames(body: bytes, start: int, version: int) -> tuple[tuple[Frame, ...], int]:
    frames, end = _frames(body, start, syncsafe=version == 4)
    if version == 4 and end < len(body) and body[end] != 0:
        plain_frames, plain_end = _frames(body, start, syncsafe=False)
        if plain_end > end:
            return plain_frames, plain_end
    return frames, end


def _frames(body: bytes, position: int, *, syncsafe: bool) -> tuple[tuple[Frame, ...], int]:
    """Frames from `position` until padding, the end, or bytes that are not a frame."""
    view = memoryview(body)
    frames: list[Frame] = []
    while position + HEADER_BYTES <= len(body):
        frame_id = body[position : position + 4]
        if not all(48 <= c <= 57 or 65 <= c <= 90 for c in frame_id):  # [A-Z0-9]{4}; 0 starts padding
            break
        size_bytes = body[position + 4 : position + 8]
        if syncsafe and any(byte & 0x80 for byte in size_bytes):
            break
        end = position + HEADER_BYTES + (_syncsafe(size_bytes) if syncsafe else int.from_bytes(size_bytes, "big"))
        if end > len(body):
            break
        if len(frames) >= MAX_FRAMES:
            raise MediaTooLarge(f"the ID3v2 tag has more than {MAX_FRAMES} frames")
        frames.append(Frame(frame_id, view[position:end]))
        position = end
    return tuple(frames), position


def tag_bytes(tag: Tag) -> bytes:
    """The tag as bytes: header, extended header, frames, padding (and the footer when flagged)."""
    body = b"".join([tag.extended, *(frame.raw for frame in tag.frames), tag.padding])
    size = _to_syncsafe(len(body))
    header = b"ID3" + bytes([tag.version, tag.revision, tag.flags]) + size
    footer = b"3DI" + header[3:] if tag.flags & _FOOTER else b""
    return header + body + footer


def header_bytes(tag: Tag, body_size: int) -> bytes:
    """The 10-byte tag header for a body (extended header, frames, padding) of `body_size` bytes."""
    return b"ID3" + bytes([tag.version, tag.revision, tag.flags]) + _to_syncsafe(body_size)


def footer_bytes(tag: Tag, body_size: int) -> bytes:
    """The footer a v2.4 tag flagged for one ends with (empty otherwise)."""
    return b"3DI" + header_bytes(tag, body_size)[3:] if tag.flags & _FOOTER else b""


def frame_header(tag: Tag, frame_id: bytes, size: int) -> bytes:
    """A frame header (no flags) for `tag`'s version: sync-safe size in v2.4, plain in v2.3."""
    return frame_id + (_to_syncsafe(size) if tag.version == 4 else size.to_bytes(4, "big")) + b"\x00\x00"


def c2pa_geob_head(tag: Tag, store_size: int) -> bytes:
    """A C2PA GEOB frame up to its object: header, text encoding, MIME type, file name and description, each
    NUL-terminated. The store follows. The encoding is UTF-8 in v2.4, as c2pa-rs writes it, and ISO-8859-1
    in v2.3, which has no UTF-8 (the fields are ASCII: the same bytes either way)."""
    encoding = b"\x03" if tag.version == 4 else b"\x00"
    fields = encoding + C2PA_MIME_TYPES[0] + b"\x00" + C2PA_FILE_NAME + b"\x00" + C2PA_DESCRIPTION + b"\x00"
    return frame_header(tag, b"GEOB", len(fields) + store_size) + fields


def _c2pa_mime_end(frame: Frame) -> int | None:
    """Where a plain GEOB frame's MIME type ends in its data, when that type is C2PA's; None otherwise."""
    if frame.id != b"GEOB" or frame.flags & 0x00FF or len(frame.raw) < HEADER_BYTES + 2:
        return None
    head = bytes(frame.raw[HEADER_BYTES : HEADER_BYTES + 64])  # the longest C2PA type is 34 bytes
    end = head.find(b"\x00", 1)
    return end if end > 0 and head[1:end] in C2PA_MIME_TYPES else None


def is_c2pa_store(frame: Frame) -> bool:
    """Whether the frame is a GEOB of C2PA's MIME type (a manifest store), whatever its other fields hold.
    A transformed frame (compressed, encrypted: its flags set) is not read as one."""
    return _c2pa_mime_end(frame) is not None


def c2pa_object(frame: Frame) -> memoryview | None:
    """The object of a C2PA GEOB frame (a view into the frame), or None for any other frame. Raises
    CorruptMedia when its file name or description is not terminated."""
    mime_end = _c2pa_mime_end(frame)
    if mime_end is None:
        return None
    data = memoryview(frame.raw)[HEADER_BYTES:]
    terminator = b"\x00\x00" if data[0] in (1, 2) else b"\x00"
    head = bytes(data[: mime_end + 1 + 2 * 1024])  # a file name and a description of a few bytes each
    position = mime_end + 1
    for _ in range(2):  # the file name, then the description
        end = _terminator_at(head, position, terminator)
        if end < 0:
            raise CorruptMedia("a C2PA GEOB frame's file name or description is not terminated")
        position = end + len(terminator)
    return data[position:]


def new_tag() -> Tag:
    """An empty ID3v2.4 tag without padding."""
    return Tag(4, 0, 0, b"", (), b"")


def with_frames(tag: Tag, frames: list[Frame] | tuple[Frame, ...]) -> Tag:
    return replace(tag, frames=tuple(frames))


def text_frame(tag: Tag, description: str, value: bytes) -> Frame:
    """A TXXX frame (ISO-8859-1, no flags) for `tag`'s version: `description`, then the ASCII `value`."""
    data = b"\x00" + description.encode("latin-1") + b"\x00" + value
    size = _to_syncsafe(len(data)) if tag.version == 4 else len(data).to_bytes(4, "big")
    return Frame(b"TXXX", b"TXXX" + size + b"\x00\x00" + data)


def unicode_text_frame(tag: Tag, description: str, value: str) -> Frame:
    """A TXXX frame (no flags) carrying any text: UTF-8 in an ID3v2.4 tag, UTF-16 with a BOM in v2.3."""
    if tag.version == 4:
        data = b"\x03" + description.encode("utf-8") + b"\x00" + value.encode("utf-8")
        size = _to_syncsafe(len(data))
    else:
        data = b"\x01" + description.encode("utf-16") + b"\x00\x00" + value.encode("utf-16")
        size = len(data).to_bytes(4, "big")
    return Frame(b"TXXX", b"TXXX" + size + b"\x00\x00" + data)


def user_text(frame: Frame) -> tuple[str, str] | None:
    """(description, value) of a plain TXXX frame; None for another frame, or a compressed,
    encrypted or otherwise transformed one (its flags set), or one that does not decode."""
    if frame.id != b"TXXX" or frame.flags & 0x00FF or len(frame.raw) < HEADER_BYTES + 1:
        return None
    data = frame.data
    encoding = _ENCODINGS.get(data[0])
    if encoding is None:
        return None
    terminator = b"\x00\x00" if data[0] in (1, 2) else b"\x00"
    split = _terminator_at(data, 1, terminator)
    if split < 0:
        return None
    try:
        description = data[1:split].decode(encoding)
        value = data[split + len(terminator) :].decode(encoding)
    except UnicodeDecodeError:
        return None
    return description, value.rstrip("\x00")


def _terminator_at(data: bytes, start: int, terminator: bytes) -> int:
    position = data.find(terminator, start)
    while position >= 0 and (position - start) % len(terminator):  # UTF-16: on a character boundary
        position = data.find(terminator, position + 1)
    return position


def _syncsafe(value: bytes) -> int:
    return value[0] << 21 | value[1] << 14 | value[2] << 7 | value[3]


def _to_syncsafe(value: int) -> bytes:
    if value >= 1 << 28:
        raise MediaTooLarge("the ID3v2 tag would pass 256 MB")
    return bytes([value >> 21 & 0x7F, value >> 14 & 0x7F, value >> 7 & 0x7F, value & 0x7F])
