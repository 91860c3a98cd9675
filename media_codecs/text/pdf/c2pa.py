"""A C2PA manifest store in a PDF: an embedded file the catalog's /AF array names, in an incremental update.

C2PA 2.2 (Appendix A, PDF) and c2pa-rs (asset_handlers/pdf.rs, pdf_io.rs) agree on where a store is: an
embedded file stream, unfiltered, whose file specification has `/AFRelationship /C2PA_Manifest` and sits
in the current catalog's associated files (`/AF`, ISO 32000-2 14.13). c2pa-rs finds it there and only
there (the first such file specification the array references; no name tree, no annotation is searched),
and its data hash excludes exactly the stream's data: from the first store byte, the store's length.

c2pa-python 0.38.1 (c2pa-rs 0.91.3) signs a PDF by rewriting the whole file; this codec keeps the bytes
before it and appends one incremental update instead (as it does for the token), so pages, text and any
earlier signature stay as they were. The update is, byte for byte:

    LF "%svc c2pa manifest update" LF
    the store as an unfiltered /EmbeddedFile stream, the next free object number
    its file specification (/AFRelationship /C2PA_Manifest, /EF pointing at the stream)
    the catalog again, same number, every entry copied as written, /AF extended with the specification
    a cross-reference section of the same kind as the file's newest one, /Prev = the previous startxref
    "startxref" LF offset LF "%%EOF" LF

Only the store's size enters it (the /Length and the offsets after the store), so the update is planned
before the store is signed. A file ends with our update exactly when its tail equals the update planned
for its prefix and the store's declared length: that is how it is recognised and removed
(`without_our_manifest`), and a byte changed outside the store makes it someone else's. A store anyone
else wrote (c2pa-rs rewrites the file) is removed by an incremental update that writes the catalog again
without the C2PA entries in /AF; the old bytes stay, unreferenced.

Limits: those of the document reader (sections, nesting, tokens, decoded bytes, reference loops), at most
MAX_ASSOCIATED_FILES entries in /AF, one C2PA file specification, a store of at most `store_limit`
bytes whose /Length is exact (its data followed by `endstream`) and that lies inside the file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from media_codecs.errors import CodecError, CorruptMedia, MediaTooLarge, UnsupportedFormat
from media_codecs.text.pdf.document import Document, Stream, read_document
from media_codecs.text.pdf.syntax import Dictionary, Ref
from media_codecs.text.pdf.update import xref_stream, xref_table

MARKER = b"\n%svc c2pa manifest update\n"
C2PA_RELATIONSHIP = "C2PA_Manifest"
MAX_ASSOCIATED_FILES = 256  # a catalog's /AF lists a few files; each entry is resolved
_MAX_MARKER_TRIES = 8
_NAME = b"(Content Credentials)"
_STREAM_HEAD = re.compile(
    rb"(\d{1,10}) 0 obj\n<</Type/EmbeddedFile/Subtype/application#2Fc2pa/Length (\d{1,10})>>stream\n")
_STREAM_END = b"\nendstream\nendobj\n"


@dataclass(frozen=True)
class StoreLocation:
    """The store's bytes, where they lie in the file, and the /AF entry that names them."""

    store: bytes
    start: int
    file_spec: Ref


@dataclass(frozen=True)
class PlannedUpdate:
    """Our update around a store of `store_size` bytes: `head` precedes the store, `tail` follows it."""

    head: bytes
    tail: bytes


def find_store(document: Document, store_limit: int) -> StoreLocation | None:
    """The C2PA store the current catalog's /AF names, or None.

    Raises CorruptMedia (two C2PA files, a filtered or malformed store, a /Length that lies or points past
    the end of the file), MediaTooLarge (past `store_limit` or MAX_ASSOCIATED_FILES), UnsupportedFormat.
    """
    specs = _c2pa_file_specs(document)
    if not specs:
        return None
    if len(specs) > 1:
        raise CorruptMedia("the PDF has two C2PA manifest stores")
    ref, spec = specs[0]
    resolve = document.reader.resolve
    embedded = resolve(spec.get("EF"))
    target = embedded.get("F") if isinstance(embedded, Dictionary) else None
    stream = resolve(target) if isinstance(target, Ref) else None
    if not isinstance(stream, Stream) or stream.buffer is not document.data:
        raise CorruptMedia("the PDF's C2PA file specification names no embedded file stream")
    declared = resolve(stream.dictionary.get("Length"))
    if isinstance(declared, bool) or not isinstance(declared, int) or declared < 0:
        raise CorruptMedia("the PDF's C2PA store has no valid /Length")
    if declared > store_limit:
        raise MediaTooLarge(f"the C2PA manifest store is larger than {store_limit // (1024 * 1024)} MB")
    if stream.dictionary.get("Filter") is not None:
        raise CorruptMedia("the PDF's C2PA store is filtered (readers take its data as written)")
    if stream.end - stream.start != declared:  # the reader fell back to the first `endstream`
        raise CorruptMedia("the /Length of the PDF's C2PA store does not match its data")
    return StoreLocation(document.data[stream.start : stream.end], stream.start, ref)


def _associated_files(document: Document) -> list:
    value = document.reader.resolve(document.catalog.get("AF"))
    if not isinstance(value, list):  # absent, or not an array: no associated file (as c2pa-rs reads it)
        return []
    if len(value) > MAX_ASSOCIATED_FILES:
        raise MediaTooLarge(f"the PDF catalog's /AF lists more than {MAX_ASSOCIATED_FILES} files")
    return value


def _c2pa_file_specs(document: Document) -> list[tuple[Ref, Dictionary]]:
    """The /AF entries whose file specification is a C2PA manifest: references only, as c2pa-rs reads them."""
    resolve, found = document.reader.resolve, []
    for item in _associated_files(document):
        if not isinstance(item, Ref):
            continue
        spec = resolve(item)
        if isinstance(spec, Dictionary) and resolve(spec.get("AFRelationship")) == C2PA_RELATIONSHIP:
            found.append((item, spec))
    return found


def plan_update(document: Document, store_size: int) -> PlannedUpdate:
    """Our update for `document` (which carries no store) around a store of `store_size` bytes.

    Raises UnsupportedFormat when the catalog's /AF cannot be extended (an indirect array holding direct
    file specifications), CorruptMedia for a malformed catalog.
    """
    stream_number = document.size
    spec_number = stream_number + 1
    origin = len(document.data) - document.shift  # offsets as this file writes them
    head = MARKER + b"%d 0 obj\n<</Type/EmbeddedFile/Subtype/application#2Fc2pa/Length %d>>stream\n" % (
        stream_number, store_size)
    offsets = {stream_number: (origin + len(MARKER), 0)}
    tail = bytearray(_STREAM_END)
    position = origin + len(head) + store_size
    offsets[spec_number] = (position + len(tail), 0)
    tail += b"%d 0 obj\n<</Type/Filespec/F%s/UF%s/Desc%s/AFRelationship/%s/EF<</F %d 0 R>>>>\nendobj\n" % (
        spec_number, _NAME, _NAME, _NAME, C2PA_RELATIONSHIP.encode(), stream_number)
    offsets[document.root.number] = (position + len(tail), document.root.generation)
    tail += b"%d %d obj\n" % document.root + _catalog(document, _af_with(document, spec_number)) + b"\nendobj\n"
    tail += _section(document, offsets, position + len(tail))
    return PlannedUpdate(head, bytes(tail))


def removal_update(document: Document, location: StoreLocation) -> bytes:
    """An update writing the catalog again without the store's /AF entry (for a store someone else wrote)."""
    origin = len(document.data) - document.shift
    kept = [item for item in _associated_files(document) if item != location.file_spec]
    if not all(isinstance(item, Ref) for item in kept):
        raise UnsupportedFormat("the PDF catalog's /AF holds direct file specifications")
    af = b"[" + b" ".join(b"%d %d R" % item for item in kept) + b"]" if kept else None
    out = bytearray(b"\n")
    offsets = {document.root.number: (origin + len(out), document.root.generation)}
    out += b"%d %d obj\n" % document.root + _catalog(document, af) + b"\nendobj\n"
    out += _section(document, offsets, origin + len(out))
    return bytes(out)


def without_our_manifest(document: Document) -> Document:
    """The document before our manifest update when the file ends with it; otherwise `document` itself."""
    data = document.data
    end = document.sections[0].position
    for _ in range(_MAX_MARKER_TRIES):  # the store itself may hold the marker's bytes: try earlier ones
        start = data.rfind(MARKER, 0, end)
        if start < 0:
            break
        previous = _before_our_update(data, start)
        if previous is not None:
            return previous
        end = start
    return document


def _before_our_update(data: bytes, start: int) -> Document | None:
    head = _STREAM_HEAD.match(data, start + len(MARKER))
    if head is None:
        return None
    try:
        previous = read_document(data[:start])
        planned = plan_update(previous, int(head.group(2)))
    except (CodecError, ValueError):
        return None
    size = len(planned.head) + int(head.group(2)) + len(planned.tail)
    if len(data) - start == size and data.startswith(planned.head, start) and data.endswith(planned.tail):
        return previous
    return None


def _af_with(document: Document, spec_number: int) -> bytes:
    ours = b"%d 0 R" % spec_number
    value = document.catalog.get("AF")
    if value is None:
        return b"[" + ours + b"]"
    if isinstance(value, list):  # written in the catalog: copied as written, ours appended
        raw = document.catalog.raw_value("AF")
        return raw[:-1] + b" " + ours + b"]"
    items = _associated_files(document)
    if not all(isinstance(item, Ref) for item in items):
        raise UnsupportedFormat("the PDF catalog's /AF holds direct file specifications")
    return b"[" + b" ".join([*(b"%d %d R" % item for item in items), ours]) + b"]"


def _catalog(document: Document, af: bytes | None) -> bytes:
    catalog = document.catalog
    entries = [catalog.raw_key(key) + b" " + catalog.raw_value(key) + b"\n" for key in catalog if key != "AF"]
    return b"<<" + b"".join(entries) + (b"/AF" + af if af is not None else b"") + b">>"


def _section(document: Document, offsets: dict[int, tuple[int, int]], xref_offset: int) -> bytes:
    if document.sections[0].is_stream:
        section = xref_stream(document, offsets, xref_offset)
    else:
        section = xref_table(document, offsets)
    return section + b"startxref\n%d\n%%%%EOF\n" % xref_offset

