"""Our incremental update (ISO 32000-1, 7.5.6): write it, and recognise it at the end of a file.

The update is, byte for byte:

    LF "%svc provenance token update" LF
    the XMP metadata stream, as the next free object number, unfiltered
    the catalog again, same number, every entry copied as written, /Metadata pointing at ours
    a cross-reference section of the same kind as the file's newest one (table, or stream) with
    /Size, /Root, /Info and /ID from the previous trailer, /Prev = the previous startxref
    "startxref" LF offset LF "%%EOF" LF

It depends only on the bytes before it and on the token, so a file ends with our update exactly
when its tail equals the update we would write for its prefix and its token: that comparison is
how the update is recognised, and any byte changed inside it makes the file not ours.
"""

from __future__ import annotations

from media_codecs import xmp
from media_codecs.disclosure import Disclosure
from media_codecs.errors import CodecError, UnsupportedFormat
from media_codecs.text.pdf.document import Document, read_document

MARKER = b"\n%svc provenance token update\n"
_ROW_WIDTHS = (1, 4, 2)  # type, offset (2**32 > the 50 MB upload limit), generation


def compose_update(document: Document, token: str, disclosure: Disclosure | None = None) -> bytes:
    """The update that gives `document` our token (and `disclosure`), merged into its XMP.

    Raises UnsupportedFormat when its metadata cannot be read or merged, CorruptMedia for a
    malformed packet, ValueError for a bad token.
    """
    if document.metadata_error:
        raise UnsupportedFormat(f"the PDF's metadata stream cannot be read: {document.metadata_error}")
    packet = xmp.merge_token(document.metadata, token, disclosure)
    metadata_number = document.size
    origin = len(document.data) - document.shift  # offsets as this file writes them
    out = bytearray(MARKER)
    offsets = {metadata_number: (origin + len(out), 0)}
    out += b"%d 0 obj\n<</Type/Metadata/Subtype/XML/Length %d>>stream\n" % (metadata_number, len(packet))
    out += packet + b"\nendstream\nendobj\n"
    offsets[document.root.number] = (origin + len(out), document.root.generation)
    out += b"%d %d obj\n" % document.root + _catalog(document, metadata_number) + b"\nendobj\n"
    xref_offset = origin + len(out)
    if document.sections[0].is_stream:
        out += xref_stream(document, offsets, xref_offset)
    else:
        out += xref_table(document, offsets)
    return bytes(out + b"startxref\n%d\n%%%%EOF\n" % xref_offset)


def without_our_update(document: Document, token: str | None) -> Document:
    """The document before our update when the file ends with it; otherwise `document` itself."""
    data = document.data
    start = data.rfind(MARKER, 0, document.sections[0].position) if token else -1
    if start < 0:
        return document
    try:
        previous = read_document(data[:start])
        expected = compose_update(previous, token, _disclosure_in(document))
    except (CodecError, ValueError):
        return document
    if len(data) - start == len(expected) and data.endswith(expected):
        return previous
    return document


def _disclosure_in(document: Document) -> Disclosure | None:
    """The disclosure our update wrote beside the token, read back so the update can be recognised whole."""
    fields = {} if document.metadata is None else xmp.read_disclosure(document.metadata)
    return Disclosure(**{"source_type": "", **fields}) if fields else None


def _catalog(document: Document, metadata_number: int) -> bytes:
    catalog = document.catalog
    entries = [catalog.raw_key(key) + b" " + catalog.raw_value(key) + b"\n" for key in catalog if key != "Metadata"]
    return b"<<" + b"".join(entries) + b"/Metadata %d 0 R>>" % metadata_number


def _trailer_entries(document: Document, size: int) -> bytes:
    entries = [b"/Size %d" % size, b"/Root %d %d R" % document.root]
    for key in ("Info", "ID"):
        raw = document.trailer_raw(key)
        if raw is not None:
            entries.append(b"/%s %s" % (key.encode(), raw))
    entries.append(b"/Prev %d" % document.startxref)
    return b"\n".join(entries)


def _runs(numbers: list[int]) -> list[tuple[int, int]]:
    """Consecutive object numbers as (first, count) subsections."""
    runs: list[tuple[int, int]] = []
    for number in sorted(numbers):
        if runs and runs[-1][0] + runs[-1][1] == number:
            runs[-1] = (runs[-1][0], runs[-1][1] + 1)
        else:
            runs.append((number, 1))
    return runs


def xref_table(document: Document, offsets: dict[int, tuple[int, int]]) -> bytes:
    out = bytearray(b"xref\n")
    for first, count in _runs(list(offsets)):
        out += b"%d %d\n" % (first, count)
        for number in range(first, first + count):
            out += b"%010d %05d n\r\n" % offsets[number]
    size = max(document.size, max(offsets) + 1)
    return bytes(out + b"trailer\n<<" + _trailer_entries(document, size) + b">>\n")


def xref_stream(document: Document, offsets: dict[int, tuple[int, int]], xref_offset: int) -> bytes:
    # 7.5.8: the stream lists itself; rows are written unfiltered, so the update stays plain bytes.
    number = max(document.size, max(offsets) + 1)
    offsets = {**offsets, number: (xref_offset, 0)}
    runs = _runs(list(offsets))
    rows = b"".join(
        b"\x01" + offsets[n][0].to_bytes(_ROW_WIDTHS[1], "big") + offsets[n][1].to_bytes(_ROW_WIDTHS[2], "big")
        for first, count in runs for n in range(first, first + count))
    index = b" ".join(b"%d %d" % run for run in runs)
    head = b"%d 0 obj\n<</Type/XRef\n%s\n/W[%d %d %d]/Index[%s]/Length %d>>stream\n" % (
        number, _trailer_entries(document, number + 1), *_ROW_WIDTHS, index, len(rows))
    return head + rows + b"\nendstream\nendobj\n"
