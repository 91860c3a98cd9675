"""A PDF's revisions as a reader sees them: the cross-reference chain, the catalog and its XMP.

ISO 32000-1, 7.5: the file's last `startxref` points at the newest cross-reference section (a
table, 7.5.4, or a stream, 7.5.8); each section's trailer points at the one before (`/Prev`), and
a table may add a stream (`/XRefStm`, 7.5.8.4, hybrid files). An object's newest entry wins. Only
the objects the codec needs are resolved (the catalog, its metadata stream, stream lengths, the
object streams holding them), never the page tree, so a file's loops and depth cost nothing.

Offsets are taken from the start of the file; when junk precedes `%PDF-` and the offsets only
make sense from the header (readers accept both), every offset is shifted by the junk's length,
and the codec writes its own offsets the same way.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from media_codecs.errors import CorruptMedia, MediaTooLarge, UnsupportedFormat
from media_codecs.text.pdf.filters import decode
from media_codecs.text.pdf.syntax import Dictionary, Parser, Ref, StreamStart, pdf_int

HEADER = b"%PDF-"
HEADER_WINDOW = 1024  # readers find the header within the first 1,024 bytes (Acrobat, pdf.js)
_STARTXREF_WINDOW = 1024  # `startxref` must be in the file's last 1,024 bytes (7.5.5)
MAX_SECTIONS = 4_096  # cross-reference sections in the chain: one per incremental update
MAX_SUBSECTIONS = 100_000  # runs of consecutive objects over all sections; an update has a few
MAX_STREAM_BYTES = 16 * 1024 * 1024  # one decoded stream (xref, object stream, metadata)
MAX_DECODED_BYTES = 64 * 1024 * 1024  # every stream the codec decodes in one file
_MAX_RESOLVE_DEPTH = 8  # a stream length inside an object stream: three levels in a real file


@dataclass(frozen=True)
class Entry:
    kind: int  # 0 free, 1 at an offset, 2 inside an object stream (7.5.8.3, Table 18)
    first: int  # offset, or the object stream's number
    second: int  # generation, or the index inside the object stream


@dataclass
class Section:
    """One cross-reference section: a table or a stream, with its trailer dictionary."""

    position: int  # where it starts in the file
    is_stream: bool
    trailer: Dictionary
    subsections: list[tuple[int, int, int]]  # first object, count, where its rows start
    row_width: int  # table rows: 20 bytes (19 from some writers); stream rows: sum of /W
    rows: bytes  # the file (table) or the decoded stream (stream)
    widths: tuple[int, ...] = ()
    has_hidden_entries: bool = False  # a hybrid table: its free rows may be in its /XRefStm (7.5.8.4)

    def entry(self, number: int) -> Entry | None:
        for first, count, start in self.subsections:
            if first <= number < first + count:
                at = start + (number - first) * self.row_width
                return self._stream_row(at) if self.is_stream else self._table_row(at)
        return None

    def _table_row(self, at: int) -> Entry:
        row = self.rows[at : at + 18]
        if len(row) != 18 or not (row[:10].isdigit() and row[11:16].isdigit()) or row[17:18] not in (b"n", b"f"):
            raise CorruptMedia("a cross-reference table row is malformed")
        return Entry(1 if row[17:18] == b"n" else 0, int(row[:10]), int(row[11:16]))

    def _stream_row(self, at: int) -> Entry:
        fields, position = [], at
        for width in self.widths:
            fields.append(int.from_bytes(self.rows[position : position + width], "big"))
            position += width
        kind = fields[0] if self.widths[0] else 1  # a zero-width type field means type 1
        return Entry(kind, fields[1], fields[2] if self.widths[2] else 0)


@dataclass
class Document:
    """A parsed PDF: its sections newest first, the catalog, and the catalog's XMP packet."""

    data: bytes
    shift: int  # added to every offset the file writes
    startxref: int  # the newest section's offset, as written
    sections: list[Section]
    root: Ref
    catalog: Dictionary
    size: int  # one more than the highest object number in use
    metadata: bytes | None = None  # the XMP packet of the catalog's /Metadata stream
    metadata_error: str | None = None  # why the metadata stream could not be read
    reader: _Reader | None = field(default=None, repr=False)  # resolves further objects, on the same budget

    def trailer_raw(self, key: str) -> bytes | None:
        """The newest trailer's `key` entry as written (for /Info and /ID), or None."""
        for section in self.sections:
            if key in section.trailer:
                return section.trailer.raw_value(key)
        return None


def read_document(data: bytes) -> Document:
    """Parse the sections, the catalog and its XMP packet.

    Raises UnsupportedFormat (not a PDF, encrypted), CorruptMedia (unreadable structure) and
    MediaTooLarge (past MAX_SECTIONS, or a stream inflating past MAX_STREAM_BYTES).
    """
    header_at = data.find(HEADER, 0, HEADER_WINDOW + len(HEADER))
    if header_at < 0:
        raise UnsupportedFormat("not a PDF file")
    startxref = _last_startxref(data)
    shift = _offset_shift(data, startxref, header_at)
    reader = _Reader(data, shift)
    sections = reader.sections(startxref)
    if any("Encrypt" in section.trailer for section in sections):
        raise UnsupportedFormat("encrypted PDFs are not supported")
    root = next((s.trailer["Root"] for s in sections if "Root" in s.trailer), None)
    if not isinstance(root, Ref):
        raise CorruptMedia("the PDF trailer names no catalog (/Root)")
    catalog = reader.resolve(root)
    if not isinstance(catalog, Dictionary):
        raise CorruptMedia("the PDF catalog is not a dictionary")
    size = max(pdf_int(section.trailer.get("Size", 0), "/Size") for section in sections)
    document = Document(data, shift, startxref, sections, root, catalog, max(size, root.number + 1), reader=reader)
    _read_metadata(reader, document)
    return document


def _last_startxref(data: bytes) -> int:
    tail_start = max(0, len(data) - _STARTXREF_WINDOW)
    at = data.rfind(b"startxref", tail_start)
    if at < 0:
        raise CorruptMedia("the PDF has no startxref in its last 1,024 bytes (truncated?)")
    parser = Parser(data)
    value, _ = parser.value(at + len(b"startxref"))
    return pdf_int(value, "startxref")


def _offset_shift(data: bytes, startxref: int, header_at: int) -> int:
    if header_at and not _looks_like_section(data, startxref) and _looks_like_section(data, startxref + header_at):
        return header_at
    return 0


def _looks_like_section(data: bytes, position: int) -> bool:
    if not 0 <= position < len(data):
        return False
    start = Parser(data).skip_space(position)
    return data.startswith(b"xref", start) or data[start : start + 1].isdigit()


def _read_metadata(reader: _Reader, document: Document) -> None:
    value = document.catalog.get("Metadata")
    stream = reader.resolve(value) if isinstance(value, Ref) else None
    if not isinstance(stream, Stream):
        return
    try:
        document.metadata = reader.stream_data(stream)
    except UnsupportedFormat as error:
        document.metadata_error = str(error)


@dataclass(frozen=True)
class Stream:
    dictionary: Dictionary
    start: int
    end: int
    buffer: bytes


class _Reader:
    """Sections and objects of one file, with a budget on everything decoded."""

    def __init__(self, data: bytes, shift: int):
        self.data = data
        self.shift = shift
        self.parser = Parser(data)
        self.sections_: list[Section] = []
        self._objects: dict[int, Any] = {}
        self._object_streams: dict[int, tuple[Parser, int, list[int]]] = {}
        self._resolving: set[int] = set()
        self._decoded = 0
        self._subsections = 0

    def sections(self, startxref: int) -> list[Section]:
        """Every section newest first, following /Prev (and /XRefStm) without loops."""
        seen: set[int] = set()
        offset: int | None = startxref
        while offset is not None:
            section = self._section(offset, seen)
            self.sections_.append(section)
            hybrid = None if section.is_stream else section.trailer.get("XRefStm")
            if hybrid is not None:
                section.has_hidden_entries = True
                self.sections_.append(self._section(pdf_int(hybrid, "/XRefStm"), seen))
            previous = section.trailer.get("Prev")
            offset = None if previous is None else pdf_int(previous, "/Prev")
        return self.sections_

    def _section(self, offset: int, seen: set[int]) -> Section:
        if offset in seen:
            raise CorruptMedia("the PDF's cross-reference sections form a loop")
        if len(seen) >= MAX_SECTIONS:
            raise MediaTooLarge(f"the PDF has more than {MAX_SECTIONS} cross-reference sections")
        seen.add(offset)
        position = offset + self.shift
        if not 0 <= position < len(self.data):
            raise CorruptMedia("a PDF cross-reference offset points outside the file")
        start = self.parser.skip_space(position)
        if self.data.startswith(b"xref", start):
            return self._table(start)
        return self._stream_section(start)

    def _table(self, start: int) -> Section:
        data, subsections, width = self.data, [], 20
        position = start + len(b"xref")
        while True:
            position = self.parser.skip_space(position)
            if data.startswith(b"trailer", position):
                break
            first, position = self.parser.value(position)
            count, position = self.parser.value(position)
            first, count = pdf_int(first, "xref subsection"), pdf_int(count, "xref subsection")
            rows_at = self.parser.skip_space(position)
            if count:
                width = _row_width(data[rows_at + 18 : rows_at + 20])
            position = rows_at + count * width
            if position > len(data):
                raise CorruptMedia("a PDF cross-reference table runs past the end of the file")
            subsections.append((first, count, rows_at))
            self._count_subsection()
        trailer, _ = self.parser.value(position + len(b"trailer"))
        if not isinstance(trailer, Dictionary):
            raise CorruptMedia("the PDF trailer is not a dictionary")
        return Section(start, False, trailer, subsections, width, data)

    def _stream_section(self, start: int) -> Section:
        _, value, _ = self.parser.indirect(start)
        if not isinstance(value, StreamStart) or value.dictionary.get("Type") != "XRef":
            raise CorruptMedia("startxref or /Prev points at neither a cross-reference table nor stream")
        stream = self._stream(value, self.parser)
        rows = self.stream_data(stream)
        widths = stream.dictionary.get("W")
        if not (isinstance(widths, list) and len(widths) == 3 and all(
                isinstance(w, int) and 0 <= w <= 8 for w in widths) and widths[1]):
            raise CorruptMedia("a PDF cross-reference stream has a malformed /W")
        size = pdf_int(stream.dictionary.get("Size"), "cross-reference stream /Size")
        index = stream.dictionary.get("Index", [0, size])
        if not isinstance(index, list) or len(index) % 2:
            raise CorruptMedia("a PDF cross-reference stream has a malformed /Index")
        row_width, subsections, row = sum(widths), [], 0
        for first, count in zip(index[::2], index[1::2], strict=True):
            subsections.append((pdf_int(first, "/Index"), pdf_int(count, "/Index"), row * row_width))
            self._count_subsection()
            row += count
        if row * row_width > len(rows):
            raise CorruptMedia("a PDF cross-reference stream is shorter than its /Index says")
        return Section(start, True, stream.dictionary, subsections, row_width, rows, tuple(widths))

    def _count_subsection(self) -> None:
        self._subsections += 1
        if self._subsections > MAX_SUBSECTIONS:
            raise MediaTooLarge(f"the PDF has more than {MAX_SUBSECTIONS} cross-reference subsections")

    def entry(self, number: int) -> Entry | None:
        for section in self.sections_:
            found = section.entry(number)
            if found is not None and not (found.kind == 0 and section.has_hidden_entries):
                return found
        return None

    def resolve(self, value: Any) -> Any:
        """`value`, or the object it refers to (None for a free or missing object). Raises CorruptMedia."""
        if not isinstance(value, Ref):
            return value
        if value.number not in self._objects:
            if value.number in self._resolving or len(self._resolving) >= _MAX_RESOLVE_DEPTH:
                raise CorruptMedia("the PDF's objects refer to one another in a loop")
            self._resolving.add(value.number)
            try:
                self._objects[value.number] = self._load(value)
            finally:
                self._resolving.discard(value.number)
        return self._objects[value.number]

    def _load(self, ref: Ref) -> Any:
        entry = self.entry(ref.number)
        if entry is None or entry.kind not in (1, 2):
            return None
        if entry.kind == 2:
            return self._compressed(ref.number, entry)
        position = entry.first + self.shift
        if not 0 <= position < len(self.data):
            raise CorruptMedia(f"the offset of PDF object {ref.number} is outside the file")
        _, value, _ = self.parser.indirect(position, expected=ref.number)
        return self._stream(value, self.parser) if isinstance(value, StreamStart) else value

    def _stream(self, start: StreamStart, parser: Parser) -> Stream:
        length = self.resolve(start.dictionary.get("Length"))
        end = start.data_start + pdf_int(length, "stream /Length")
        after = parser.skip_space(end) if end <= len(parser.buffer) else len(parser.buffer)
        if not parser.buffer.startswith(b"endstream", after):
            # A wrong /Length is common; the data then ends at the first `endstream` (as pdf.js reads it).
            found = parser.buffer.find(b"endstream", start.data_start)
            if found < 0:
                raise CorruptMedia("a PDF stream has no endstream")
            end = found - (2 if parser.buffer[found - 2 : found] == b"\r\n" else 1)
            end = max(end, start.data_start)
        return Stream(start.dictionary, start.data_start, end, parser.buffer)

    def stream_data(self, stream: Stream) -> bytes:
        """The stream's decoded data, counted against MAX_DECODED_BYTES. Raises CodecError subclasses."""
        data = decode(stream.dictionary, stream.buffer[stream.start : stream.end], MAX_STREAM_BYTES)
        self._decoded += len(data)
        if self._decoded > MAX_DECODED_BYTES:
            raise MediaTooLarge(f"the PDF's streams decode past {MAX_DECODED_BYTES // (1024 * 1024)} MB")
        return data

    def _compressed(self, number: int, entry: Entry) -> Any:
        parser, first, offsets = self._object_stream(entry.first)
        if entry.second >= len(offsets):
            raise CorruptMedia(f"PDF object {number} is missing from its object stream")
        value, _ = parser.value(first + offsets[entry.second])
        return value

    def _object_stream(self, number: int) -> tuple[Parser, int, list[int]]:
        if number not in self._object_streams:
            stream = self.resolve(Ref(number, 0))
            if not isinstance(stream, Stream) or stream.dictionary.get("Type") != "ObjStm":
                raise CorruptMedia(f"PDF object {number} is not an object stream")
            data = self.stream_data(stream)
            count = pdf_int(stream.dictionary.get("N"), "object stream /N")
            first = pdf_int(stream.dictionary.get("First"), "object stream /First")
            header = data[:first].split()
            if first > len(data) or len(header) < 2 * count or not all(item.isdigit() for item in header[:2 * count]):
                raise CorruptMedia(f"PDF object stream {number} has a malformed header")
            offsets = [int(item) for item in header[1 : 2 * count : 2]]
            self._object_streams[number] = (Parser(data), first, offsets)
        return self._object_streams[number]


def _row_width(ending: bytes) -> int:
    # 7.5.4: 20-byte rows end in SP CR, SP LF or CR LF; some writers end them in a lone LF or CR.
    return 19 if ending[:1] == b"\n" or (ending[:1] == b"\r" and ending[1:2] != b"\n") else 20
