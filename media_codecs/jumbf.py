"""JUMBF (ISO/IEC 19566-5) boxes: the container C2PA manifests travel in. Pure: bytes in, boxes out.

A box is `LBox` (u32, total size with the header) + `TBox` (4 characters) + payload; `LBox` 1 means a
u64 `XLBox` follows, `LBox` 0 means "to the end of the enclosing box". A superbox (`jumb`) holds a
description box (`jumd`: UUID, toggles, NUL-terminated label, optional private box such as the `c2sh`
salt) and then its children: superboxes or content boxes (`cbor`, `json`, `bidb`, ...), which we keep
as raw payloads.

Hostile input: every size is checked against its enclosing box before use, nesting is bounded by
MAX_DEPTH and the whole tree by MAX_BOXES, so parsing is linear in the input and raises only
`CorruptMedia` (sizes that lie, truncation, a bad description) or `MediaTooLarge` (the bounds).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from media_codecs.errors import CorruptMedia, MediaTooLarge

SUPERBOX = b"jumb"
DESCRIPTION = b"jumd"
MAX_DEPTH = 16  # a C2PA store nests 5 deep (store, manifest, assertion store, assertion, content)
MAX_BOXES = 10_000  # a manifest store has a few dozen
MAX_LABEL_BYTES = 1024

# jumd toggles (ISO/IEC 19566-5 Table B.3)
REQUESTABLE = 0x01
HAS_LABEL = 0x02
HAS_ID = 0x04
HAS_SIGNATURE = 0x08
HAS_PRIVATE = 0x10
_HEADER = 8


@dataclass
class ContentBox:
    """A leaf box kept as its type and payload (`cbor`, `json`, `bidb`, `bfdb`, ...)."""

    type: bytes
    payload: bytes


@dataclass
class SuperBox:
    """A `jumb` superbox: its description and children. `raw` is the whole box as read (None when built)."""

    label: str
    uuid: bytes
    children: list[SuperBox | ContentBox] = field(default_factory=list)
    toggles: int = REQUESTABLE | HAS_LABEL
    private: ContentBox | None = None  # e.g. the `c2sh` salt box C2PA puts after the label
    box_id: int | None = None
    signature: bytes | None = None
    raw: bytes | None = None

    def child(self, label: str) -> SuperBox | None:
        """The first child superbox with this label, or None."""
        return next((box for box in self.children if isinstance(box, SuperBox) and box.label == label), None)

    def superboxes(self) -> list[SuperBox]:
        return [box for box in self.children if isinstance(box, SuperBox)]

    def content(self, box_type: bytes) -> bytes | None:
        """The payload of the first content box of this type, or None."""
        return next((box.payload for box in self.children if isinstance(box, ContentBox) and box.type == box_type),
                    None)


def box(box_type: bytes, payload: bytes) -> bytes:
    """One box with its header; XLBox when the payload passes 4 GB."""
    if len(box_type) != 4:
        raise ValueError("a box type is 4 bytes")
    size = len(payload) + _HEADER
    if size > 0xFFFFFFFF:
        return (1).to_bytes(4, "big") + box_type + (size + 8).to_bytes(8, "big") + payload
    return size.to_bytes(4, "big") + box_type + payload


def write(superbox: SuperBox) -> bytes:
    """Serialize a superbox and everything in it."""
    return box(SUPERBOX, description_box(superbox) + b"".join(_write_child(child) for child in superbox.children))


def description_box(superbox: SuperBox) -> bytes:
    """The `jumd` box of a superbox; toggles are derived from what is present (plus REQUESTABLE as given)."""
    if len(superbox.uuid) != 16:
        raise ValueError("a JUMBF UUID is 16 bytes")
    toggles = (superbox.toggles & REQUESTABLE) | HAS_LABEL
    payload = superbox.label.encode() + b"\x00"
    if superbox.box_id is not None:
        toggles |= HAS_ID
        payload += superbox.box_id.to_bytes(4, "big")
    if superbox.signature is not None:
        toggles |= HAS_SIGNATURE
        payload += superbox.signature
    if superbox.private is not None:
        toggles |= HAS_PRIVATE
        payload += box(superbox.private.type, superbox.private.payload)
    return box(DESCRIPTION, superbox.uuid + bytes([toggles]) + payload)


def _write_child(child: SuperBox | ContentBox) -> bytes:
    return write(child) if isinstance(child, SuperBox) else box(child.type, child.payload)


def read(data: bytes) -> SuperBox:
    """Parse `data`, which must be exactly one superbox. Raises CorruptMedia, MediaTooLarge."""
    view = memoryview(bytes(data))
    counter = [0]
    box_type, start, end = _box_at(view, 0, len(view))
    if box_type != SUPERBOX or end != len(view):
        raise CorruptMedia("the JUMBF data is not exactly one superbox")
    return _read_superbox(view, 0, start, end, 1, counter)


def _box_at(view: memoryview, position: int, limit: int) -> tuple[bytes, int, int]:
    """(type, payload start, end) of the box at `position`, all within `limit`."""
    if position + _HEADER > limit:
        raise CorruptMedia("a JUMBF box header is truncated")
    size = int.from_bytes(view[position : position + 4], "big")
    box_type = bytes(view[position + 4 : position + 8])
    start = position + _HEADER
    if size == 1:
        if start + 8 > limit:
            raise CorruptMedia("a JUMBF XLBox is truncated")
        size = int.from_bytes(view[start : start + 8], "big")
        start += 8
        if size < 16:
            raise CorruptMedia("a JUMBF XLBox is smaller than its header")
    elif size == 0:
        size = limit - position
    elif size < _HEADER:
        raise CorruptMedia("a JUMBF box is smaller than its header")
    if position + size > limit:
        raise CorruptMedia("a JUMBF box runs past its enclosing box")
    return box_type, start, position + size


def _read_superbox(view: memoryview, box_start: int, start: int, end: int, depth: int, counter: list[int]) -> SuperBox:
    if depth > MAX_DEPTH:
        raise MediaTooLarge(f"JUMBF superboxes nest more than {MAX_DEPTH} deep")
    _count(counter)
    box_type, payload_start, position = _box_at(view, start, end)
    if box_type != DESCRIPTION:
        raise CorruptMedia("a JUMBF superbox does not start with its description box")
    superbox = _read_description(view, payload_start, position, counter)
    superbox.raw = bytes(view[box_start:end])
    while position < end:
        _count(counter)
        box_type, payload_start, child_end = _box_at(view, position, end)
        if box_type == SUPERBOX:
            superbox.children.append(_read_superbox(view, position, payload_start, child_end, depth + 1, counter))
        else:
            superbox.children.append(ContentBox(box_type, bytes(view[payload_start:child_end])))
        position = child_end
    return superbox


def _read_description(view: memoryview, start: int, end: int, counter: list[int]) -> SuperBox:
    if end - start < 17:
        raise CorruptMedia("a JUMBF description box is truncated")
    uuid, toggles = bytes(view[start : start + 16]), view[start + 16]
    position = start + 17
    label = ""
    if toggles & HAS_LABEL:
        terminator = bytes(view[position : min(end, position + MAX_LABEL_BYTES + 1)]).find(b"\x00")
        if terminator < 0:
            raise CorruptMedia("a JUMBF label is not NUL-terminated")
        try:
            label = bytes(view[position : position + terminator]).decode()
        except UnicodeDecodeError:
            raise CorruptMedia("a JUMBF label is not UTF-8") from None
        position += terminator + 1
    superbox = SuperBox(label, uuid, toggles=toggles)
    if toggles & HAS_ID:
        if position + 4 > end:
            raise CorruptMedia("a JUMBF description box ID is truncated")
        superbox.box_id = int.from_bytes(view[position : position + 4], "big")
        position += 4
    if toggles & HAS_SIGNATURE:
        if position + 32 > end:
            raise CorruptMedia("a JUMBF description box signature is truncated")
        superbox.signature = bytes(view[position : position + 32])
        position += 32
    if toggles & HAS_PRIVATE:
        _count(counter)
        box_type, payload_start, position = _box_at(view, position, end)
        superbox.private = ContentBox(box_type, bytes(view[payload_start:position]))
    return superbox


def _count(counter: list[int]) -> None:
    counter[0] += 1
    if counter[0] > MAX_BOXES:
        raise MediaTooLarge(f"the JUMBF data holds more than {MAX_BOXES} boxes")
