"""PDFs made at test time: text pages written with pypdf, files assembled object by object (for
cross-reference streams and hostile structures), and the qpdf/exiftool helpers that skip when the
tool is missing."""

from __future__ import annotations

import io
import shutil
import subprocess
import tempfile
import zlib
from pathlib import Path

import pytest
from pypdf import PdfReader, PdfWriter
from pypdf.generic import ArrayObject, DecodedStreamObject, DictionaryObject, NameObject, NumberObject

PAGE_TEXTS = ("Provenance matters", "Second page of text", "Third and last page")
FONT = b"<</Type/Font/Subtype/Type1/BaseFont/Helvetica>>"


def text_pdf(texts: tuple[str, ...] = PAGE_TEXTS[:1], xmp: bytes | None = None) -> bytes:
    """A PDF written by pypdf (classic cross-reference table) with one line of text per page."""
    writer = PdfWriter()
    font = writer._add_object(DictionaryObject({NameObject("/Type"): NameObject("/Font"),
                                                NameObject("/Subtype"): NameObject("/Type1"),
                                                NameObject("/BaseFont"): NameObject("/Helvetica")}))
    for text in texts:
        page = writer.add_blank_page(300, 300)
        content = DecodedStreamObject()
        content.set_data(b"BT /F1 14 Tf 20 200 Td (" + text.encode() + b") Tj ET")
        page[NameObject("/Contents")] = writer._add_object(content)
        page[NameObject("/Resources")] = DictionaryObject(
            {NameObject("/Font"): DictionaryObject({NameObject("/F1"): font})})
    if xmp is not None:
        metadata = DecodedStreamObject()
        metadata.set_data(xmp)
        metadata.update({NameObject("/Type"): NameObject("/Metadata"), NameObject("/Subtype"): NameObject("/XML")})
        writer._root_object[NameObject("/Metadata")] = writer._add_object(metadata)
    return _written(writer)


def with_annotation(data: bytes) -> bytes:
    """`data` plus an incremental update (pypdf) adding a square annotation to the first page."""
    writer = PdfWriter(io.BytesIO(data), incremental=True)
    annotation = writer._add_object(DictionaryObject({
        NameObject("/Type"): NameObject("/Annot"), NameObject("/Subtype"): NameObject("/Square"),
        NameObject("/Rect"): ArrayObject([NumberObject(10), NumberObject(10), NumberObject(60), NumberObject(60)])}))
    writer.pages[0][NameObject("/Annots")] = ArrayObject([annotation])
    return _written(writer)


def with_title_update(data: bytes) -> bytes:
    """`data` plus an incremental update (pypdf) changing the document information's title."""
    writer = PdfWriter(io.BytesIO(data), incremental=True)
    writer.add_metadata({"/Title": "Updated later"})
    return _written(writer)


def encrypted(data: bytes) -> bytes:
    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(data)))
    writer.encrypt("user-password", algorithm="AES-128")
    return _written(writer)


def _written(writer: PdfWriter) -> bytes:
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()


def page_texts(data: bytes) -> list[str]:
    return [page.extract_text() for page in PdfReader(io.BytesIO(data)).pages]


# --- assembled by hand ------------------------------------------------------------------------------

def simple_objects(text: str = "Made by hand") -> dict[int, bytes]:
    """Catalog 1, pages 2, page 3, content 4, font 5: the bodies of a one-page PDF."""
    content = b"BT /F1 14 Tf 20 200 Td (" + text.encode() + b") Tj ET"
    return {
        1: b"<</Type/Catalog/Pages 2 0 R>>",
        2: b"<</Type/Pages/Kids[3 0 R]/Count 1>>",
        3: b"<</Type/Page/Parent 2 0 R/MediaBox[0 0 300 300]/Contents 4 0 R/Resources<</Font<</F1 5 0 R>>>>>>",
        4: b"<</Length %d>>stream\n" % len(content) + content + b"\nendstream",
        5: FONT,
    }


def assemble_pdf(objects: dict[int, bytes], *, xref: str = "table", compressed: tuple[int, ...] = (),
                 trailer: bytes = b"/Root 1 0 R", prefix: bytes = b"", version: bytes = b"1.5",
                 object_stream_data: bytes | None = None) -> bytes:
    """A PDF of `objects` (number -> body) with a correct cross-reference table or stream.

    With `xref="stream"`, the section is a FlateDecode cross-reference stream with PNG Up rows, and
    the objects in `compressed` go into one object stream, as qpdf --object-streams=generate does
    (`object_stream_data`, when given, replaces that stream's compressed data).
    """
    out = bytearray(prefix + b"%PDF-" + version + b"\n%\xe2\xe3\xcf\xd3\n")
    start = len(prefix)
    offsets: dict[int, tuple[int, int, int]] = {}
    size = max(objects) + 1
    plain = {number: body for number, body in objects.items() if number not in compressed}
    if compressed:
        object_stream_number, size = size, size + 1
        plain[object_stream_number] = _object_stream(objects, compressed, object_stream_data)
        offsets.update({number: (2, object_stream_number, i) for i, number in enumerate(compressed)})
    for number, body in sorted(plain.items()):
        offsets[number] = (1, len(out) - start, 0)
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref_offset = len(out) - start
    if xref == "table":
        out += b"xref\n0 %d\n0000000000 65535 f \n" % size
        out += b"".join(b"%010d %05d n \n" % (offsets[n][1], 0) for n in range(1, size))
        out += b"trailer\n<</Size %d %s>>\n" % (size, trailer)
    else:
        offsets[size] = (1, xref_offset, 0)
        rows = [b"\x00" * 5 + b"\xff"] + [bytes([offsets[n][0]]) + offsets[n][1].to_bytes(4, "big")
                                                 + offsets[n][2].to_bytes(1, "big") for n in range(1, size + 1)]
        data = zlib.compress(_up_filtered(rows))
        out += b"%d 0 obj\n<</Type/XRef/Size %d/W[1 4 1]/Filter/FlateDecode/DecodeParms<</Columns 6/Predictor 12>>"\
               b"%s/Length %d>>stream\n" % (size, size + 1, trailer, len(data)) + data + b"\nendstream\nendobj\n"
    return bytes(out + b"startxref\n%d\n%%%%EOF\n" % xref_offset)


def _object_stream(objects: dict[int, bytes], numbers: tuple[int, ...], data: bytes | None) -> bytes:
    header, body = [], b""
    for number in numbers:
        header.append(b"%d %d" % (number, len(body)))
        body += objects[number] + b"\n"
    head = b" ".join(header) + b"\n"
    data = zlib.compress(head + body) if data is None else data
    return b"<</Type/ObjStm/N %d/First %d/Filter/FlateDecode/Length %d>>stream\n" % (
        len(numbers), len(head), len(data)) + data + b"\nendstream"


def _up_filtered(rows: list[bytes]) -> bytes:
    previous, out = bytes(len(rows[0])), bytearray()
    for row in rows:
        out += b"\x02" + bytes((a - b) & 0xFF for a, b in zip(row, previous, strict=True))
        previous = row
    return bytes(out)


# --- reference tools ------------------------------------------------------------------------------

def has_qpdf() -> bool:
    return shutil.which("qpdf") is not None


def qpdf(data: bytes, *arguments: str) -> bytes:
    """`data` rewritten by qpdf with `arguments`; skips the test when qpdf is not installed."""
    if not has_qpdf():
        pytest.skip("qpdf is not installed")
    with tempfile.TemporaryDirectory() as folder:
        source, target = Path(folder, "in.pdf"), Path(folder, "out.pdf")
        source.write_bytes(data)
        subprocess.run(["qpdf", *arguments, str(source), str(target)], check=True, capture_output=True, timeout=600)
        return target.read_bytes()


def qpdf_check(data: bytes) -> subprocess.CompletedProcess:
    """`qpdf --check` on `data` (exit 0: no errors, 2: errors, 3: warnings only)."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder, "check.pdf")
        path.write_bytes(data)
        return subprocess.run(["qpdf", "--check", str(path)], capture_output=True, text=True, timeout=600)


def hybrid_pdf() -> bytes:
    """A hybrid-reference file (7.5.8.4): a classic table whose trailer's /XRefStm lists the catalog,
    which sits in an object stream that older readers do not see."""
    objects = simple_objects("Hybrid reference file")
    out = bytearray(b"%PDF-1.5\n%\xe2\xe3\xcf\xd3\n")
    offsets = {}
    for number in (2, 3, 4, 5):
        offsets[number] = len(out)
        out += b"%d 0 obj\n" % number + objects[number] + b"\nendobj\n"
    offsets[6] = len(out)
    out += b"6 0 obj\n" + _object_stream(objects, (1,), None) + b"\nendobj\n"
    offsets[7] = len(out)
    rows = zlib.compress(b"\x02\x00\x00\x00\x06\x00")  # object 1: first in object stream 6
    out += b"7 0 obj\n<</Type/XRef/Size 8/Index[1 1]/W[1 4 1]/Filter/FlateDecode/Length %d>>stream\n" % len(
        rows) + rows + b"\nendstream\nendobj\n"
    xref_offset = len(out)
    out += b"xref\n0 8\n0000000000 65535 f \n0000000000 00000 f \n"
    out += b"".join(b"%010d 00000 n \n" % offsets[n] for n in range(2, 8))
    out += b"trailer\n<</Size 8/Root 1 0 R/XRefStm %d>>\nstartxref\n%d\n%%%%EOF\n" % (offsets[7], xref_offset)
    return bytes(out)
