"""ISO BMFF (MP4, QuickTime): the store travels in a top-level `uuid` box right after `ftyp`, bound with
`c2pa.hash.bmff.v3` (C2PA 2.2 A.4; what c2pa-rs `bmff_io.rs` writes and reads).

The box: size, `uuid`, the C2PA extended type d8fec3d6-1b0e-483c-9297-5828877ec481, a FullBox header
(version 0, flags 0), the purpose `manifest` NUL-terminated, a u64 offset to the first auxiliary (Merkle)
`uuid` box (0: none), then the JUMBF store. c2pa-rs inserts it after `ftyp` and adds its size to every
absolute file offset behind it: here the chunk offsets of `stco` / `co64`. `layout` does the same with
fresh bytes for those tables only (views elsewhere: mdat is never copied); `strip` subtracts it again, so
strip(embed(x)) == x and the content hash (mp4.py `hashed_parts`, which strips the store the same way)
does not move when a manifest is embedded.

The binding: c2pa-rs's default exclusions (the C2PA `uuid` box, matched by its extended type at offset
8, then `/ftyp`, `/mfra`, `/free`, `/skip`), and a hash (v2 and v3 alike for a file without Merkle
trees) over every top-level box not excluded, each preceded by its file offset as a big-endian u64: so
moving a box breaks the binding even when its bytes stay the same. `binding_matches` reads any exclusion
list c2pa-rs writes (xpaths, `length`, `version`, `flags`, `data`, `subset`) and hashes as c2pa-rs does.

Not carried: fragmented files (`moof`/`mvex`, whose v3 binding is a Merkle tree per fragment), update
manifests (`original`/`update` purposes), Merkle (`merkle` purpose) boxes, and files whose other absolute
offsets would move (a top-level `meta` with `iloc`, `saio` in a sample table): UnsupportedFormat.
"""

from __future__ import annotations

import bisect
import hashlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from media_codecs.c2pa.carriers.base import MAX_EXCLUSIONS, MAX_STORE_BYTES, Carrier, Found, Layout, Piece
from media_codecs.errors import CodecError, CorruptMedia, MediaTooLarge, UnsupportedFormat
from media_codecs.video import bmff
from media_codecs.video.limits import MAX_SAMPLES

C2PA_UUID = bytes.fromhex("d8fec3d61b0e483c92975828877ec481")
BINDING_LABEL = "c2pa.hash.bmff.v3"
PURPOSE = b"manifest"
_OTHER_PURPOSES = (b"original", b"update", b"merkle")
_FULL_BOX = bytes(4)  # version 0, flags 0
# size, type, extended type, version/flags, purpose and its NUL, the u64 offset of the first Merkle box
_BOX_HEADER = 8 + 16 + 4 + len(PURPOSE) + 1 + 8
_MAX_BOX = 0xFFFFFFFF
_HASHES = ("sha256", "sha384", "sha512")
_DIGEST_SIZES = {"sha256": 32, "sha384": 48, "sha512": 64}
# Boxes an exclusion's xpath may name below the top level: those c2pa-rs's tree descends into that a
# movie file holds. A FullBox container (`meta`) has 4 more header bytes.
_XPATH_CONTAINERS = bmff.CONTAINERS | {b"udta", b"dinf", b"mfra", b"moof", b"traf", b"sinf", b"schi", b"meta"}
_MAX_XPATH_DEPTH = 8
_MAX_RANGES = 100_000
_OFFSET_TABLES = {b"stco": 4, b"co64": 8}
_STBL_PATH = (b"trak", b"mdia", b"minf", b"stbl")
_END = 1 << 62  # past any offset a table may hold (they are checked to lie inside the file)


def default_exclusions() -> list[dict]:
    """c2pa-rs `BmffHash::set_default_exclusions`, in its order and CBOR shape."""
    return [{"xpath": "/uuid", "data": [{"offset": 8, "value": C2PA_UUID}]},
            {"xpath": "/ftyp"}, {"xpath": "/mfra"}, {"xpath": "/free"}, {"xpath": "/skip"}]


_EXCLUDED_TYPES = (b"ftyp", b"mfra", b"free", b"skip")


@dataclass(frozen=True)
class _Table:
    """A chunk-offset table: where its entries lie in the file and their width (4: stco, 8: co64)."""

    start: int
    count: int
    width: int

    @property
    def end(self) -> int:
        return self.start + self.count * self.width

    def offsets(self, view: memoryview) -> np.ndarray:
        """The offsets as int64: a co64 entry past 2^63 reads negative and is refused as outside the file."""
        return np.frombuffer(view[self.start : self.end], dtype=">u4" if self.width == 4 else ">i8").astype(np.int64)


@dataclass(frozen=True)
class _File:
    """The top-level boxes of a movie file and the chunk-offset tables inside its `moov`."""

    boxes: tuple[bmff.Box, ...]
    tables: tuple[_Table, ...]  # in file order


@dataclass(frozen=True)
class BmffLayout(Layout):
    """A layout that also knows the output's top-level boxes: (offset, pieces, excluded from the hash)."""

    regions: tuple[tuple[int, tuple[Piece, ...], bool], ...] = ()


def is_c2pa_box(data: bytes | memoryview, box: bmff.Box) -> bool:
    return box.type == b"uuid" and bytes(data[box.start + box.header - 16 : box.start + box.header]) == C2PA_UUID


def _parse(data: bytes | memoryview) -> _File:
    """The top-level boxes and the offset tables. Raises UnsupportedFormat, CorruptMedia, MediaTooLarge."""
    if bytes(data[4:8]) != b"ftyp":
        raise UnsupportedFormat("an ISO BMFF file must start with an ftyp box")
    boxes = bmff.read_boxes(data, 0, len(data), top_level=True, limit=bmff.MAX_TOP_LEVEL_BOXES)
    if bmff.find(boxes, b"moof"):
        raise UnsupportedFormat("fragmented MP4 (moof) carries no C2PA manifest here; remux it as a regular MP4")
    movies = bmff.find(boxes, b"moov")
    if len(movies) != 1:
        raise CorruptMedia(f"the file has {len(movies)} moov boxes, not one")
    for meta in bmff.find(boxes, b"meta"):
        if any(child.type == b"iloc" for child in _meta_children(data, meta)):
            raise UnsupportedFormat("a file with item locations (meta/iloc) carries no C2PA manifest here")
    return _File(tuple(boxes), tuple(_tables(data, movies[0], len(data))))


def _meta_children(data: bytes | memoryview, meta: bmff.Box) -> list[bmff.Box]:
    """A `meta` box's children: after the FullBox header (ISO), or right away (QuickTime writes none)."""
    for skip in (4, 0):
        try:
            return bmff.read_boxes(data, meta.payload_start + skip, meta.end, top_level=False,
                                   limit=bmff.MAX_MOOV_BOXES)
        except CodecError:
            continue
    return []


def _tables(data: bytes | memoryview, moov: bmff.Box, file_size: int) -> Iterator[_Table]:
    """The stco/co64 tables of every track, checked: counts inside their box, offsets inside the file."""
    seen, chunks = [0], 0

    def children(box: bmff.Box) -> list[bmff.Box]:
        found = bmff.read_boxes(data, box.payload_start, box.end, top_level=False, limit=bmff.MAX_MOOV_BOXES)
        seen[0] += len(found)
        if seen[0] > bmff.MAX_MOOV_BOXES:
            raise MediaTooLarge(f"moov holds more than {bmff.MAX_MOOV_BOXES} boxes")
        return found

    top = children(moov)
    if bmff.find(top, b"mvex"):
        raise UnsupportedFormat("fragmented MP4 (mvex) carries no C2PA manifest here; remux it as a regular MP4")
    for trak in bmff.find(top, b"trak"):
        level = [trak]
        for kind in _STBL_PATH[1:]:
            level = [box for parent in level for box in bmff.find(children(parent), kind)]
        for stbl in level:
            for box in children(stbl):
                if box.type == b"saio":
                    raise UnsupportedFormat("a file with sample auxiliary offsets (saio) carries no C2PA manifest "
                                            "here")
                if box.type in _OFFSET_TABLES:
                    table = _table(data, box, file_size)
                    chunks += table.count
                    if chunks > MAX_SAMPLES:  # a chunk holds a sample at least
                        raise MediaTooLarge(f"the tracks declare more than {MAX_SAMPLES:,} chunks")
                    yield table


def _table(data: bytes | memoryview, box: bmff.Box, file_size: int) -> _Table:
    width = _OFFSET_TABLES[box.type]
    if box.end - box.payload_start < 8:
        raise CorruptMedia(f"the {box.type.decode()} box is truncated")
    count = int.from_bytes(data[box.payload_start + 4 : box.payload_start + 8], "big")
    table = _Table(box.payload_start + 8, count, width)
    if count > (box.end - table.start) // width:
        raise CorruptMedia(f"the {box.type.decode()} box declares more chunks than it holds")
    offsets = table.offsets(memoryview(data))
    if count and (int(offsets.max()) >= file_size or int(offsets.min()) < 0):
        raise CorruptMedia("a chunk offset points past the end of the file")
    return table


Moves = Sequence[tuple[int, int, int | None]]  # offsets in [low, high) get delta added; None: refused


def _shifted(view: memoryview, table: _Table, moves: Moves) -> bytes:
    """The table's entries with each offset moved as `moves` says (None: it points into a removed box)."""
    values = table.offsets(view)
    result = values.copy()
    for low, high, delta in moves:
        inside = (values >= low) & (values < high)
        if not inside.any():
            continue
        if delta is None:
            raise CorruptMedia("a chunk offset points into the C2PA manifest box")
        result[inside] += delta
    if table.width == 4 and len(result) and int(result.max()) > 0xFFFFFFFF:
        raise MediaTooLarge("a chunk offset no longer fits its stco table; the file is too large")
    return result.astype(">u4" if table.width == 4 else ">u8").tobytes()


def _box_pieces(view: memoryview, box: bmff.Box, tables: Sequence[_Table], moves: Moves,
                *, real_size: bool = False) -> list[Piece]:
    """The box as views into the file with its offset tables rewritten (fresh bytes for those alone).
    With `real_size`, a box declaring size 0 ("to the end") gets its real size in its size field."""
    pieces: list[Piece] = []
    position = box.start
    if real_size and box.declared_to_end:
        if box.end - box.start > _MAX_BOX:
            raise UnsupportedFormat("a last box of size 0 is too large to be given its real 32-bit size")
        pieces.append((box.end - box.start).to_bytes(4, "big"))
        position += 4
    for table in tables:
        if box.start <= table.start and table.end <= box.end and table.count:
            pieces += [view[position : table.start], _shifted(view, table, moves)]
            position = table.end
    pieces.append(view[position : box.end])
    return [piece for piece in pieces if len(piece)]


def stripped_boxes(data: bytes, *, real_size: bool = False) -> tuple[list[tuple[bmff.Box, list[Piece]]], int]:
    """The top-level boxes of `data` other than C2PA `uuid` boxes, each as pieces (views, and chunk-offset
    tables moved back by the removed boxes' sizes), and how many were removed. Raises CodecError.

    A file without a C2PA box is not read past its top level: hashing it asks nothing more of it."""
    view = memoryview(data)
    boxes = bmff.read_boxes(data, 0, len(data), top_level=True, limit=bmff.MAX_TOP_LEVEL_BOXES)
    removed = [box for box in boxes if is_c2pa_box(data, box)]
    tables = _parse(data).tables if removed else ()
    moves: list[tuple[int, int, int | None]] = []
    delta = position = 0
    for box in removed:
        moves += [(position, box.start, -delta), (box.start, box.end, None)]
        delta += box.end - box.start
        position = box.end
    moves.append((position, _END, -delta))
    kept = [(box, _box_pieces(view, box, tables, moves, real_size=real_size)) for box in boxes if box not in removed]
    return kept, len(removed)


class BmffCarrier(Carrier):
    mime_type = "video/mp4"
    binding_label = BINDING_LABEL

    def find(self, data: bytes) -> Found | None:
        """The store of the C2PA `uuid` box (purpose `manifest`), or None. Raises CodecError.

        Only the top level is read: a file's tables matter when the store moves, not when it is found."""
        if bytes(data[4:8]) != b"ftyp":
            raise UnsupportedFormat("an ISO BMFF file must start with an ftyp box")
        found = None
        for box in bmff.read_boxes(data, 0, len(data), top_level=True, limit=bmff.MAX_TOP_LEVEL_BOXES):
            if not is_c2pa_box(data, box):
                continue
            payload = box.start + box.header  # version and flags (c2pa-rs reads neither), then the purpose
            end = data.find(b"\x00", payload + 4, min(box.end, payload + 4 + 16))
            if end < 0:
                raise CorruptMedia("the C2PA box has no purpose")
            purpose = bytes(data[payload + 4 : end])
            if purpose in _OTHER_PURPOSES:
                raise UnsupportedFormat(f"a C2PA box of purpose {purpose.decode()} (update manifests, Merkle "
                                        "trees) is not read here")
            if purpose != PURPOSE:
                raise CorruptMedia("the C2PA box has an unknown purpose")
            start = end + 1 + 8
            if start > box.end:
                raise CorruptMedia("the C2PA box is truncated")
            if found is not None:
                raise CorruptMedia("the file has two C2PA manifest stores")
            if box.end - start > MAX_STORE_BYTES:
                raise MediaTooLarge("the C2PA manifest store is larger than 32 MB")
            found = Found(bytes(data[start : box.end]), box.start, box.end - box.start)
        return found

    def strip(self, data: bytes) -> bytes:
        kept, removed = stripped_boxes(data)
        return b"".join(piece for _, pieces in kept for piece in pieces) if removed else data

    def wrapped(self, store: bytes) -> bytes:
        self.check_store_size(len(store))
        size = self.wrapped_size(len(store))
        return (size.to_bytes(4, "big") + b"uuid" + C2PA_UUID + _FULL_BOX + PURPOSE + b"\x00" + bytes(8)) + store

    def wrapped_size(self, store_size: int) -> int:
        return _BOX_HEADER + store_size

    def layout(self, stripped: bytes, store_size: int) -> BmffLayout:
        """The store's box after `ftyp`; every chunk offset behind it moved by the box's size."""
        parsed = _parse(stripped)
        view = memoryview(stripped)
        size = self.wrapped_size(store_size)
        ftyp = parsed.boxes[0]
        moves = [(0, ftyp.end, 0), (ftyp.end, _END, size)]
        regions: list[tuple[int, tuple[Piece, ...], bool]] = []
        for box in parsed.boxes[1:]:
            pieces = tuple(_box_pieces(view, box, parsed.tables, moves))
            regions.append((box.start + size, pieces, box.type in _EXCLUDED_TYPES))
        head = (view[: ftyp.end],)
        tail = tuple(piece for _, pieces, _ in regions for piece in pieces)
        return BmffLayout(head, tail, size, ((0, head, True), *regions))

    def binding(self, layout: Layout, *, placeholder: bool = False) -> dict:
        if not isinstance(layout, BmffLayout):
            raise TypeError("a BMFF binding needs a BMFF layout")
        digest = bytes(32) if placeholder else _regions_digest(layout.regions)
        return {"exclusions": default_exclusions(), "alg": "sha256", "hash": digest, "name": "jumbf manifest"}

    def binding_matches(self, data: bytes, found: Found, content: dict, default_alg: object) -> bool:
        """Whether a `c2pa.hash.bmff` (v2 or v3) file hash holds for `data`, computed as c2pa-rs does."""
        alg = content.get("alg", default_alg)
        expected = content.get("hash")
        if alg not in _HASHES or not isinstance(expected, bytes) or content.get("merkle"):
            return False
        try:
            ranges, offsets = _exclusion_ranges(data, content.get("exclusions"))
        except (CodecError, KeyError, TypeError, ValueError, OverflowError):
            return False
        covered = any(start <= found.start and found.start + found.length <= start + length
                      for start, length in ranges)
        return covered and _file_digest(data, ranges, offsets, alg) == expected


def _regions_digest(regions: Sequence[tuple[int, Sequence[Piece], bool]]) -> bytes:
    digest = hashlib.sha256()
    for offset, pieces, excluded in regions:
        if excluded:
            continue
        digest.update(offset.to_bytes(8, "big"))
        for piece in pieces:
            digest.update(piece)
    return digest.digest()


def _exclusion_ranges(data: bytes, exclusions: object) -> tuple[list[tuple[int, int]], list[int]]:
    """The byte ranges the exclusions cover, and the offsets of the top-level boxes the hash includes
    (c2pa-rs `bmff_to_jumbf_exclusions`: a box excluded whole drops its offset). Raises on a bad map."""
    if not isinstance(exclusions, list | tuple) or len(exclusions) > MAX_EXCLUSIONS:
        raise ValueError("bad exclusions")
    boxes = bmff.read_boxes(data, 0, len(data), top_level=True, limit=bmff.MAX_TOP_LEVEL_BOXES)
    offsets = {box.start for box in boxes}
    ranges: list[tuple[int, int]] = []
    budget = [bmff.MAX_MOOV_BOXES]
    for exclusion in exclusions:
        if not isinstance(exclusion, dict) or not isinstance(exclusion.get("xpath"), str):
            raise ValueError("bad exclusion")
        for box in _xpath(data, boxes, exclusion["xpath"], budget):
            if not _exclusion_applies(data, box, exclusion):
                continue
            if len(ranges) > _MAX_RANGES:
                raise MediaTooLarge("the exclusions cover too many ranges")
            size = box.end - box.start
            subsets = exclusion.get("subset")
            if subsets is None:
                ranges.append((box.start, size))
                offsets.discard(box.start)
                continue
            if not isinstance(subsets, list | tuple) or len(subsets) > MAX_EXCLUSIONS:
                raise ValueError("bad subsets")
            for subset in subsets:
                offset, length = int(subset["offset"]), int(subset["length"])
                if offset < 0 or length < 0:
                    raise ValueError("bad subset")
                if offset > size:
                    continue
                ranges.append((box.start + offset, size - offset if length == 0 else min(length, size - offset)))
    return ranges, sorted(offsets)


def _xpath(data: bytes, top: list[bmff.Box], xpath: str, budget: list[int]) -> list[bmff.Box]:
    """The boxes an xpath like `/moov/trak/mdia` names (every match at each step; `[n]` indexes unsupported)."""
    steps = xpath.split("/")
    if steps[0] != "" or len(steps) < 2 or len(steps) > _MAX_XPATH_DEPTH + 1:
        return []
    try:
        kinds = [step.encode("latin-1") for step in steps[1:]]
    except UnicodeEncodeError:
        return []
    level = [box for box in top if box.type == kinds[0]]
    for kind in kinds[1:]:
        below = []
        for box in level:
            if box.type not in _XPATH_CONTAINERS:
                continue
            skip = 4 if box.type == b"meta" else 0
            children = bmff.read_boxes(data, box.payload_start + skip, box.end, top_level=False,
                                       limit=bmff.MAX_MOOV_BOXES)
            budget[0] -= len(children)
            if budget[0] < 0:
                raise MediaTooLarge("the exclusions name too many boxes")
            below += [child for child in children if child.type == kind]
        level = below
    return level


def _exclusion_applies(data: bytes, box: bmff.Box, exclusion: dict) -> bool:
    length = exclusion.get("length")
    if length is not None and int(length) != box.end - box.start:
        return False
    payload = box.start + box.header
    version = exclusion.get("version")
    if version is not None and payload < box.end and int(version) != data[payload]:
        return False
    flags = exclusion.get("flags")
    if flags is not None and payload + 4 <= box.end:
        wanted = int.from_bytes(bytes(flags[:3]).ljust(3, b"\x00"), "big") if len(flags) >= 3 else 0
        actual = int.from_bytes(data[payload + 1 : payload + 4], "big")
        if exclusion.get("exact", True) is not False:
            if wanted != actual:
                return False
        elif wanted | actual != wanted:
            return False
    for item in exclusion.get("data") or []:
        value, offset = item["value"], int(item["offset"])
        if not isinstance(value, bytes) or offset < 0 or box.start + offset + len(value) > len(data):
            raise ValueError("bad data map")
        if data[box.start + offset : box.start + offset + len(value)] != value:
            return False
    return True


def _file_digest(data: bytes, ranges: list[tuple[int, int]], offsets: list[int], alg: str) -> bytes | None:
    """c2pa-rs `hash_stream_by_alg` with exclusions and BMFF v2 offsets: the file minus the ranges, each
    included top-level box preceded by its offset (u64, big-endian). None where c2pa-rs fails."""
    size = len(data)
    if any(start + length > size for start, length in ranges) or not size:
        return None
    included: list[tuple[int, int]] = []  # [start, end) the exclusions leave
    position = 0
    for start, length in sorted((s, n) for s, n in ranges if n > 0):
        if start > position:
            included.append((position, start))
        position = max(position, start + length)
    if position < size:
        included.append((position, size))
    marks = set(offsets)
    items: list[tuple[int, int, int]] = []  # (start, end, kind): kind 0 an offset mark, 1 bytes
    placed: set[int] = set()
    for low, high in included:
        current = low
        for mark in offsets[bisect.bisect_left(offsets, low) : bisect.bisect_left(offsets, high)]:
            if mark != current:
                items.append((current, mark, 1))
                current = mark
            items.append((mark, mark, 0))
            placed.add(mark)
        items.append((current, high, 1))
    if items:  # the marks of boxes a subset cut into, between the first and the last range hashed
        first, last = items[0][0], items[-1][1] - 1  # c2pa-rs compares with the last range's inclusive end
        items += [(mark, mark, 0) for mark in offsets if mark not in placed and first < mark < last]
        items.sort(key=lambda item: (item[0], item[2]))
    digest, view = hashlib.new(alg), memoryview(data)
    for start, end, kind in items:
        if kind == 0 or (end - start == 1 and start in marks):  # c2pa-rs reads a 1-byte range there as a mark
            digest.update(start.to_bytes(8, "big"))
        else:
            digest.update(view[start:end])
    return digest.digest()


BMFF_CARRIER = BmffCarrier()


class QuickTimeCarrier(BmffCarrier):
    mime_type = "video/quicktime"


QUICKTIME_CARRIER = QuickTimeCarrier()
