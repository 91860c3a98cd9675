"""The PDF codec on PDFs made at test time: the token as an incremental update, read by pypdf, qpdf
and exiftool; the strip rule; detection; hostile structures."""

from __future__ import annotations

import io
import tempfile
import zlib
from pathlib import Path

import pytest
from conftest import OTHER_TOKEN, TOKEN, XMP_WITH_CREATOR, assert_only_codec_errors, exiftool_token, has_exiftool
from pypdf import PdfReader

from media_codecs import CorruptMedia, MediaTooLarge, UnsupportedFormat, detect, get_codec, xmp
from media_codecs.base import SCORE_MAGIC, SCORE_NONE, SCORE_WEAK
from media_codecs.text.pdf import filters
from media_codecs.text.pdf.syntax import Parser
from media_codecs.text.pdf.update import MARKER
from tests.pdf_samples import (
    PAGE_TEXTS,
    assemble_pdf,
    encrypted,
    has_qpdf,
    hybrid_pdf,
    page_texts,
    qpdf,
    qpdf_check,
    simple_objects,
    text_pdf,
    with_annotation,
    with_title_update,
)
from tests.waiting import CpuSpent

codec = get_codec("pdf")

# Each sample is made when a test asks for it; those needing qpdf skip without it.
SAMPLES = {
    "one-page": lambda: text_pdf(),
    "three-pages": lambda: text_pdf(PAGE_TEXTS),
    "existing-xmp": lambda: text_pdf(PAGE_TEXTS[:2], xmp=XMP_WITH_CREATOR),
    "incremental-update": lambda: with_title_update(text_pdf(PAGE_TEXTS[:2], xmp=XMP_WITH_CREATOR)),
    "xref-stream-by-hand": lambda: assemble_pdf(simple_objects(), xref="stream"),
    "object-stream-by-hand": lambda: assemble_pdf(simple_objects(), xref="stream", compressed=(1, 2, 3, 5)),
    "hybrid-reference-by-hand": lambda: hybrid_pdf(),
    "junk-before-header": lambda: assemble_pdf(simple_objects(), prefix=b"X-Mailer: junk\r\n\r\n"),
    "qpdf-object-streams": lambda: qpdf(text_pdf(PAGE_TEXTS, xmp=XMP_WITH_CREATOR), "--object-streams=generate"),
    "qpdf-linearized": lambda: qpdf(text_pdf(PAGE_TEXTS), "--linearize"),
    "qpdf-linearized-object-streams": lambda: qpdf(text_pdf(PAGE_TEXTS), "--linearize", "--object-streams=generate"),
}


@pytest.fixture(params=list(SAMPLES))
def sample(request) -> bytes:
    return SAMPLES[request.param]()


def _pypdf_token(data: bytes) -> str | None:
    return xmp.read_token(PdfReader(io.BytesIO(data)).trailer["/Root"]["/Metadata"].get_data())


def test_the_token_is_appended_as_an_update_and_stripped_back_to_the_input(sample) -> None:
    signed = codec.embed_token(sample, TOKEN)
    assert signed.startswith(sample) and signed.count(MARKER) == 1
    assert codec.extract_token(signed) == TOKEN
    assert codec.strip_token(signed) == sample == codec.strip_token(sample)


def test_embedding_again_replaces_our_update(sample) -> None:
    resigned = codec.embed_token(codec.embed_token(sample, TOKEN), OTHER_TOKEN)
    assert resigned == codec.embed_token(sample, OTHER_TOKEN)
    assert codec.extract_token(resigned) == OTHER_TOKEN and codec.strip_token(resigned) == sample


def test_pages_text_and_the_token_read_the_same_in_pypdf(sample) -> None:
    signed = codec.embed_token(sample, TOKEN)
    assert page_texts(signed) == page_texts(sample)
    assert _pypdf_token(signed) == TOKEN


def test_qpdf_finds_no_error_in_a_signed_pdf(sample) -> None:
    if not has_qpdf():
        pytest.skip("qpdf is not installed")
    result = qpdf_check(codec.embed_token(sample, TOKEN))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "No syntax or stream encoding errors found" in result.stdout


def test_exiftool_reads_the_token(sample) -> None:
    if not has_exiftool():
        pytest.skip("exiftool is not installed")
    if not sample.startswith(b"%PDF-"):
        pytest.skip("exiftool reads a PDF only with %PDF- at offset 0")
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder, "signed.pdf")
        path.write_bytes(codec.embed_token(sample, TOKEN))
        assert exiftool_token(str(path)) == TOKEN


def test_the_update_uses_the_kind_of_cross_reference_section_the_file_ends_with() -> None:
    table = text_pdf()
    stream = assemble_pdf(simple_objects(), xref="stream")
    assert b"\nxref\n" in codec.embed_token(table, TOKEN)[len(table):]
    tail = codec.embed_token(stream, TOKEN)[len(stream):]
    assert b"/Type/XRef" in tail and b"\nxref\n" not in tail


def test_existing_xmp_properties_are_kept() -> None:
    signed = codec.embed_token(text_pdf(xmp=XMP_WITH_CREATOR), TOKEN)
    assert PdfReader(io.BytesIO(signed)).xmp_metadata.dc_creator == ["Ada Lovelace"]
    assert _pypdf_token(signed) == TOKEN


def test_a_file_without_our_update_strips_to_itself() -> None:
    for data in (text_pdf(), with_title_update(text_pdf())):
        assert codec.strip_token(data) == data and codec.extract_token(data) is None


def test_an_update_after_ours_keeps_the_token_and_changes_the_hashed_bytes() -> None:
    original = text_pdf(PAGE_TEXTS[:2])
    annotated = with_annotation(codec.embed_token(original, TOKEN))
    assert codec.extract_token(annotated) == TOKEN
    assert codec.strip_token(annotated) == annotated  # the rule: only a final update of ours is removed
    resigned = codec.embed_token(annotated, OTHER_TOKEN)
    assert resigned.startswith(annotated) and codec.extract_token(resigned) == OTHER_TOKEN
    assert codec.strip_token(resigned) == annotated
    packet = PdfReader(io.BytesIO(resigned)).trailer["/Root"]["/Metadata"].get_data()
    assert packet.count(b"svc:Token>") == 2  # one element, opened and closed: the older token is gone


def test_a_byte_changed_in_the_original_part_is_kept_by_strip() -> None:
    original = text_pdf()
    signed = bytearray(codec.embed_token(original, TOKEN))
    at = signed.index(b"Provenance matters")
    signed[at] = ord("p")
    stripped = codec.strip_token(bytes(signed))
    assert stripped == bytes(signed[: len(original)]) and stripped != original


def test_a_byte_changed_in_our_update_makes_it_not_ours() -> None:
    original = text_pdf()
    signed = codec.embed_token(original, TOKEN)
    changed = signed.replace(b"/Type/Metadata", b"/Type/Metadata ", 1)[:-1]  # same length, still valid
    assert codec.extract_token(changed) == TOKEN and codec.strip_token(changed) == changed


def test_encrypted_pdfs_are_an_unsupported_format() -> None:
    data = encrypted(text_pdf())
    assert detect(data) is codec
    with pytest.raises(UnsupportedFormat, match="encrypted"):
        codec.open(data)


def test_detection_scores_the_header_at_zero_highest_and_later_weakly() -> None:
    data = text_pdf()
    assert codec.score(data[:4096]) == SCORE_MAGIC
    assert codec.score(b"junk before it\r\n" * 20 + data[:4096]) == SCORE_WEAK
    assert codec.score(b" " * 1100 + data[:2000]) == SCORE_NONE
    assert codec.score(b"Plain text that mentions %PDF- but no version") == SCORE_NONE
    declared = (codec.format, codec.family, codec.mime_type, codec.token_source)
    assert declared == ("pdf", "text", "application/pdf", "xmp")
    assert not codec.can_watermark and codec.fingerprint_kind is None and codec.fingerprint(data) is None


def test_bad_bytes_raise_only_codec_errors() -> None:
    assert_only_codec_errors(codec, assemble_pdf(simple_objects(), xref="stream", compressed=(1, 2, 3)))
    assert_only_codec_errors(codec, codec.embed_token(text_pdf(xmp=XMP_WITH_CREATOR), TOKEN))


def test_a_truncated_file_is_corrupt_or_reads_as_a_complete_revision() -> None:
    original = assemble_pdf(simple_objects(), xref="stream", compressed=(1, 2))
    data = codec.embed_token(original, TOKEN)
    eol_and_eof = len(b"\n%%EOF\n")  # readers accept a file whose %%EOF line is cut
    for length in range(len(data)):
        try:
            token = codec.extract_token(data[:length])
        except (CorruptMedia, UnsupportedFormat):
            continue
        # Past the original's end, a cut update is ignored like any bytes after %%EOF.
        if token is None:
            assert len(original) - eol_and_eof <= length < len(data) - eol_and_eof
        else:
            assert token == TOKEN and length >= len(data) - eol_and_eof


# --- hostile structures: each is a CodecError, quickly, never a hang or another exception ------------

def _with_catalog(catalog: bytes, **options) -> bytes:
    return assemble_pdf({**simple_objects(), 1: catalog}, **options)


def _bomb(megabytes: int) -> bytes:
    return zlib.compress(bytes(megabytes * 1024 * 1024), 9)


HOSTILE = {
    "deep-nesting": (lambda: _with_catalog(b"<</Type/Catalog/Deep " + b"[" * 100_000 + b">>"), CorruptMedia),
    "deep-dictionaries": (lambda: _with_catalog(b"<</Type/Catalog/D " + b"<</D " * 50_000 + b">>"), CorruptMedia),
    "endless-array": (lambda: _with_catalog(b"<</Type/Catalog/Pages 2 0 R/A[" + b"0 " * 300_000 + b"]>>"),
                      MediaTooLarge),
    "huge-number": (lambda: _with_catalog(b"<</Type/Catalog/Pages 2 0 R/N " + b"9" * 100_000 + b">>"), CorruptMedia),
    "unterminated-string": (lambda: _with_catalog(b"<</Type/Catalog/S (" + b"((" * 10_000), CorruptMedia),
    "catalog-is-a-reference": (lambda: _with_catalog(b"1 0 R"), CorruptMedia),
    "length-refers-to-itself": (lambda: assemble_pdf({**simple_objects(), 4: b"<</Length 4 0 R>>stream\nx\nendstream"},
                                                     trailer=b"/Root 4 0 R"), CorruptMedia),
    "prev-loop": (lambda: _loop_of_sections(), CorruptMedia),
    "xref-outside-the-file": (lambda: _lying_startxref(10**9), CorruptMedia),
    "startxref-into-an-object": (lambda: _lying_startxref(30), CorruptMedia),
    "no-startxref": (lambda: text_pdf().replace(b"startxref", b"startxxxx"), CorruptMedia),
    "no-trailer": (lambda: text_pdf().replace(b"trailer", b"garbage"), CorruptMedia),
    "no-root": (lambda: assemble_pdf(simple_objects(), trailer=b"/Info 1 0 R"), CorruptMedia),
    "object-stream-bomb": (lambda: _object_stream_bomb(), MediaTooLarge),
    "metadata-bomb": (lambda: _metadata_bomb(), MediaTooLarge),
    "xref-stream-claims-billions": (lambda: _xref_stream_claiming(2**31), CorruptMedia),
    "thousands-of-sections": (lambda: _many_sections(5_000), MediaTooLarge),
    "unknown-filter": (lambda: assemble_pdf({**simple_objects(), 1: b"<</Type/Catalog/Pages 2 0 R/Metadata 6 0 R>>",
                                             6: b"<</Filter/LZWDecode/Length 1>>stream\nx\nendstream"}), None),
}


@pytest.mark.parametrize("name", list(HOSTILE))
def test_hostile_structures_raise_codec_errors_quickly(name: str) -> None:
    build, expected = HOSTILE[name]
    data = build()
    with CpuSpent() as spent:
        if expected is None:  # readable, but not something we can merge into
            with pytest.raises(UnsupportedFormat):
                codec.embed_token(data, TOKEN)
            assert codec.extract_token(data) is None and codec.strip_token(data) == data
        else:
            with pytest.raises(expected):
                codec.open(data)
    assert spent.seconds < 5, spent.seconds  # this process's CPU: a busy machine does not stretch it


def test_loops_in_the_page_tree_cost_nothing() -> None:
    # Pages 2 lists itself as its own kid: the codec never walks the page tree.
    data = assemble_pdf({**simple_objects(), 2: b"<</Type/Pages/Kids[2 0 R 3 0 R]/Count 2>>"})
    signed = codec.embed_token(data, TOKEN)
    assert codec.extract_token(signed) == TOKEN and codec.strip_token(signed) == data


def _lying_startxref(offset: int) -> bytes:
    data = text_pdf()
    at = data.rindex(b"startxref")
    return data[:at] + b"startxref\n%d\n%%%%EOF\n" % offset


def _loop_of_sections() -> bytes:
    data = text_pdf()
    xref_at = data.rindex(b"\nxref\n") + 1
    return data.replace(b"trailer\n<<", b"trailer\n<<\n/Prev %d" % xref_at, 1)


def _object_stream_bomb() -> bytes:
    # The catalog sits in an object stream that inflates to 40 MB.
    return assemble_pdf(simple_objects(), xref="stream", compressed=(1, 2), object_stream_data=_bomb(40))


def _metadata_bomb() -> bytes:
    data = _bomb(40)
    return assemble_pdf({**simple_objects(), 1: b"<</Type/Catalog/Pages 2 0 R/Metadata 6 0 R>>",
                         6: b"<</Type/Metadata/Filter/FlateDecode/Length %d>>stream\n" % len(data) + data
                         + b"\nendstream"})


def _xref_stream_claiming(size: int) -> bytes:
    pdf = assemble_pdf(simple_objects(), xref="stream")
    return pdf.replace(b"/Type/XRef/Size 7", b"/Type/XRef/Size %d" % size, 1)


def _many_sections(count: int) -> bytes:
    out = bytearray(text_pdf())
    previous = int(out[out.rindex(b"startxref") + 10 :].split()[0])
    for _ in range(count):
        offset = len(out)
        out += b"xref\n0 0\ntrailer\n<</Size 9/Root 3 0 R/Prev %d>>\n" % previous
        previous = offset
    return bytes(out + b"startxref\n%d\n%%%%EOF\n" % previous)


def test_a_flate_compressed_metadata_stream_is_merged_into() -> None:
    packet = zlib.compress(XMP_WITH_CREATOR)
    data = assemble_pdf({**simple_objects(), 1: b"<</Type/Catalog/Pages 2 0 R/Metadata 6 0 R>>",
                         6: b"<</Type/Metadata/Subtype/XML/Filter/FlateDecode/Length %d>>stream\n" % len(packet)
                         + packet + b"\nendstream"})
    signed = codec.embed_token(data, TOKEN)
    assert PdfReader(io.BytesIO(signed)).xmp_metadata.dc_creator == ["Ada Lovelace"]
    assert codec.extract_token(signed) == TOKEN and codec.strip_token(signed) == data


@pytest.mark.parametrize("kinds", [(2, 2, 2, 2), (0, 2, 0, 2), (1, 3, 4, 2), (4, 4, 1, 0)])
def test_png_predictor_rows_are_undone(kinds: tuple[int, ...]) -> None:
    rows = [bytes((17 * r + 31 * c * c) & 0xFF for c in range(6)) for r in range(len(kinds))]
    encoded, previous = bytearray(), bytes(6)
    for kind, row in zip(kinds, rows, strict=True):
        encoded += bytes([kind]) + _png_filtered(kind, row, previous, pixel_bytes=2)
        previous = row
    parameters = b"<</Columns 3/Colors 2/Predictor 12>>"
    dictionary = Parser(b"<</Filter/FlateDecode/DecodeParms" + parameters + b">>").value(0)[0]
    assert filters.decode(dictionary, zlib.compress(bytes(encoded)), 1 << 20) == b"".join(rows)


def _png_filtered(kind: int, row: bytes, previous: bytes, pixel_bytes: int) -> bytes:
    out = bytearray()
    for i, value in enumerate(row):
        left = row[i - pixel_bytes] if i >= pixel_bytes else 0
        corner = previous[i - pixel_bytes] if i >= pixel_bytes else 0
        up = previous[i]
        estimate = left + up - corner
        paeth = min((abs(estimate - left), 0, left), (abs(estimate - up), 1, up), (abs(estimate - corner), 2, corner))
        prediction = (0, left, up, (left + up) // 2, paeth[2])[kind]
        out.append((value - prediction) & 0xFF)
    return bytes(out)
