"""C2PA manifests in PDF: the store as an /AF embedded file in an incremental update, read back by
c2pa-python, qpdf, pypdf and our own reader; PDFs signed by c2pa-python's Builder as upstream manifests;
hostile files refused with codec errors only."""

from __future__ import annotations

import contextlib
import datetime
import functools
import json
import re

import pytest
from conftest import TOKEN

from media_codecs import CodecError, CorruptMedia, MediaTooLarge, get_codec, open_media
from media_codecs.c2pa import (
    carriers,
    embed,
    read_manifest,
    strip_manifest,
    upstream_from_store,
    validate_upstream,
    verify_manifest,
)
from media_codecs.c2pa.carriers.pdf import PDF_CARRIER
from media_codecs.text.pdf import c2pa as pdf_c2pa
from media_codecs.text.pdf.document import read_document
from media_codecs.text.pdf.update import MARKER as TOKEN_MARKER
from record_format.hashing import content_hash_of_media
from tests.pdf_samples import (
    PAGE_TEXTS,
    assemble_pdf,
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

c2pa = pytest.importorskip("c2pa")

from tests.c2pa_formats import facts, verify_ml_dsa  # noqa: E402
from tests.c2pa_signers import codes, hybrid_signer, ml_dsa_signer, trusted_report, tsa_stamper  # noqa: E402
from tests.c2pa_upstream import c2pa_report, c2pa_sign, hostile_stores  # noqa: E402
from tests.tsa_server import LocalTsa  # noqa: E402

MIME = "application/pdf"
EXPECTED_FAILURES = ["algorithm.unsupported", "claimSignature.mismatch"]
MOMENT = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
codec = get_codec("pdf")

SAMPLES = {
    "three-pages": lambda: text_pdf(PAGE_TEXTS),
    "incremental-update": lambda: with_title_update(text_pdf(PAGE_TEXTS[:2])),
    "xref-stream-by-hand": lambda: assemble_pdf(simple_objects(), xref="stream"),
    "object-stream-by-hand": lambda: assemble_pdf(simple_objects(), xref="stream", compressed=(1, 2, 3, 5)),
    "hybrid-reference-by-hand": lambda: hybrid_pdf(),
    "junk-before-header": lambda: assemble_pdf(simple_objects(), prefix=b"X-Mailer: junk\r\n\r\n"),
    "qpdf-linearized-object-streams": lambda: qpdf(text_pdf(PAGE_TEXTS), "--linearize", "--object-streams=generate"),
}


@functools.cache
def _signed(name: str) -> tuple[bytes, bytes, bytes]:
    """(sample, sample with our token, that file with our manifest embedded by the ML-DSA-only signer)."""
    sample = SAMPLES[name]()
    original = codec.embed_token(sample, TOKEN)
    return sample, original, embed(original, facts(), ml_dsa_signer())


@pytest.fixture(params=list(SAMPLES))
def signed(request) -> tuple[bytes, bytes, bytes]:
    if request.param.startswith("qpdf") and not has_qpdf():
        pytest.skip("qpdf is not installed")
    return _signed(request.param)


# -- our manifests ------------------------------------------------------------------------------------


def test_the_pdf_codec_carries_a_store() -> None:
    assert codec.c2pa_carrier is PDF_CARRIER
    assert carriers.carrier_for(text_pdf()) is PDF_CARRIER


def test_c2pa_python_reads_our_manifest_and_only_rejects_the_algorithm(signed) -> None:
    _, _, out = signed
    report = trusted_report(out, MIME)
    assert codes(report, "failure") == EXPECTED_FAILURES
    assert "assertion.dataHash.match" in codes(report, "success")
    assert report["manifests"][report["active_manifest"]]["claim_generator_info"][0]["name"] == "Provenance Service"


def test_the_pdf_stays_valid_with_its_pages_text_and_token(signed) -> None:
    sample, original, out = signed
    assert out.startswith(original)  # an incremental update: every earlier byte stays
    if has_qpdf():
        result = qpdf_check(out)
        assert result.returncode == 0, result.stdout + result.stderr
    assert page_texts(out) == page_texts(sample)
    assert codec.extract_token(out) == TOKEN


def test_our_reader_verifies_it_and_strips_it_back_to_the_input(signed) -> None:
    sample, original, out = signed
    result = verify_manifest(out, verify_ml_dsa)
    assert result.signature_valid and result.data_hash_valid and result.is_valid
    assert all(result.assertion_hashes.values()) and len(result.assertion_hashes) >= 3
    manifest = read_manifest(out)
    assert manifest.provenance["record_id"] == "rec_0123" and manifest.manifest_count == 1
    found = PDF_CARRIER.find(out)
    assert out[found.start : found.start + found.length] == found.store
    assert strip_manifest(out) == original and strip_manifest(original) == original
    assert codec.strip_token(out) == sample == codec.strip_token(original)


def test_the_content_hash_is_the_same_before_and_after_the_manifest(signed) -> None:
    _, original, out = signed
    assert content_hash_of_media(open_media(out)) == content_hash_of_media(open_media(original))


def test_the_store_is_an_associated_file_as_c2pa_rs_expects() -> None:
    _, original, out = _signed("three-pages")
    update = out[len(original) :]
    assert update.startswith(pdf_c2pa.MARKER) and out.count(pdf_c2pa.MARKER) == 1
    assert b"/AFRelationship/C2PA_Manifest" in update and b"/Type/EmbeddedFile" in update
    binding = read_manifest(out).assertions["c2pa.hash.data"]
    found = PDF_CARRIER.find(out)
    assert binding["exclusions"] == [{"start": found.start, "length": found.length}]
    assert out[found.start - len(b"stream\n") : found.start] == b"stream\n"


def test_a_hybrid_time_stamped_manifest_is_trusted() -> None:
    sample = codec.embed_token(text_pdf(PAGE_TEXTS[:2]), TOKEN)
    with LocalTsa() as tsa:
        out = embed(sample, facts(), hybrid_signer(tsa_stamper(tsa.url)))
        report = trusted_report(out, MIME, [tsa.root])
    assert report["validation_state"] == "Trusted"
    assert codes(report, "failure") == []
    assert {"assertion.dataHash.match", "timeStamp.validated", "timeStamp.trusted"} <= set(codes(report, "success"))


def test_one_changed_page_byte_breaks_the_binding() -> None:
    _, _, out = _signed("three-pages")
    at = out.index(b"Second page of text")
    changed = out[:at] + b"T" + out[at + 1 :]
    result = verify_manifest(changed, verify_ml_dsa)
    assert result.signature_valid and not result.data_hash_valid
    assert "assertion.dataHash.mismatch" in codes(trusted_report(changed, MIME), "failure")


def test_an_update_appended_afterwards_breaks_the_binding() -> None:
    _, _, out = _signed("three-pages")
    later = with_annotation(out)
    assert not verify_manifest(later, verify_ml_dsa).data_hash_valid
    assert "assertion.dataHash.mismatch" in codes(trusted_report(later, MIME), "failure")
    assert codec.extract_token(later) == TOKEN
    assert codec.strip_token(later) == later  # someone else's update last: the content changed
    stripped = strip_manifest(later)
    assert read_manifest(stripped) is None and stripped.startswith(later)


def test_a_changed_byte_in_our_update_makes_it_not_ours() -> None:
    _, original, out = _signed("three-pages")
    at = out.rindex(b"/Desc(Content Credentials)")
    changed = out[:at] + b"/Desc(Content Credentialz)" + out[at + len(b"/Desc(Content Credentials)") :]
    assert read_manifest(changed) is not None
    assert strip_manifest(changed) != original and read_manifest(strip_manifest(changed)) is None
    assert codec.strip_token(changed) == changed


def test_embedding_twice_replaces_the_manifest() -> None:
    _, original, out = _signed("xref-stream-by-hand")
    second = facts(record_id="rec_9999")
    twice = embed(out, second, ml_dsa_signer())
    assert twice.startswith(original) and twice.count(pdf_c2pa.MARKER) == 1
    manifest = read_manifest(twice)
    assert manifest.manifest_count == 1 and manifest.provenance["record_id"] == "rec_9999"
    assert strip_manifest(twice) == original
    report = trusted_report(twice, MIME)
    assert list(report["manifests"]) == [second.manifest_label]
    assert codes(report, "failure") == EXPECTED_FAILURES


def test_the_token_is_read_through_our_update_and_kept_below_it() -> None:
    sample, original, out = _signed("incremental-update")
    assert out.count(TOKEN_MARKER) == 1 and out.index(TOKEN_MARKER) < out.index(pdf_c2pa.MARKER)
    assert codec.embed_token(sample, TOKEN) == original


def test_an_existing_associated_files_array_is_extended() -> None:
    objects = simple_objects()
    objects[1] = b"<</Type/Catalog/Pages 2 0 R/AF[6 0 R]>>"
    objects[6] = b"<</Type/Filespec/F(data.csv)/AFRelationship/Data>>"
    for data in (assemble_pdf(objects), assemble_pdf({**objects, 1: b"<</Type/Catalog/Pages 2 0 R/AF 7 0 R>>",
                                                      7: b"[6 0 R]"})):
        out = embed(data, facts(), ml_dsa_signer())
        catalog = read_document(out).catalog
        assert catalog["AF"][0] == (6, 0) and len(catalog["AF"]) == 2
        assert codes(trusted_report(out, MIME), "failure") == EXPECTED_FAILURES
        assert strip_manifest(out) == data


def test_a_large_store_is_carried() -> None:
    out = embed(text_pdf(), facts(token="t" * 150_000), ml_dsa_signer())
    assert len(PDF_CARRIER.find(out).store) > 150_000
    assert verify_manifest(out, verify_ml_dsa).is_valid
    assert "assertion.dataHash.match" in codes(trusted_report(out, MIME), "success")


# -- upstream manifests (c2pa-python's Builder rewrites the file) ------------------------------------------


@functools.cache
def _upstream(name: str = "three-pages") -> bytes:
    return c2pa_sign(SAMPLES[name](), MIME)


def _status_set(results: dict) -> set[tuple[str, str, str]]:
    return {(kind, status["code"], status["url"]) for kind, statuses in results["activeManifest"].items()
            if kind in ("success", "informational", "failure") for status in statuses}


@pytest.mark.parametrize("name", ["three-pages", "object-stream-by-hand"])
def test_an_upstream_pdf_validates_as_c2pa_python_reports_it(name: str) -> None:
    upstream = _upstream(name)
    found = validate_upstream(upstream)
    report = c2pa_report(upstream, MIME)
    assert _status_set(found.validation_results) == _status_set(report["validation_results"])
    assert found.failure_codes == ["signingCredential.untrusted"] and found.is_valid
    assert found.label == report["active_manifest"] and found.format == MIME
    assert found.store == PDF_CARRIER.find(upstream).store


def test_a_changed_byte_in_an_upstream_pdf_is_a_data_hash_mismatch() -> None:
    upstream = _upstream()
    at = upstream.index(b"Second page of text")
    changed = upstream[:at] + b"T" + upstream[at + 1 :]
    found = validate_upstream(changed)
    assert found.failure_codes == ["signingCredential.untrusted", "assertion.dataHash.mismatch"]
    assert _status_set(found.validation_results) == _status_set(c2pa_report(changed, MIME)["validation_results"])


def test_an_upstream_store_is_stripped_by_an_update_dropping_it_from_the_catalog() -> None:
    upstream = _upstream()
    stripped = strip_manifest(upstream)
    assert stripped.startswith(upstream) and PDF_CARRIER.find(stripped) is None
    assert strip_manifest(stripped) == stripped
    assert page_texts(stripped) == list(PAGE_TEXTS)
    if has_qpdf():
        assert qpdf_check(stripped).returncode == 0
    with pytest.raises(c2pa.C2paError):
        c2pa_report(stripped, MIME)


@pytest.mark.parametrize("kept", ["validated", "as-stored"])
def test_an_upstream_manifest_becomes_our_parent_ingredient(kept: str) -> None:
    upstream = _upstream()
    found = validate_upstream(upstream, at=MOMENT + datetime.timedelta(days=30))
    if kept == "as-stored":
        persisted = json.loads(json.dumps({"store": found.store.hex(), "results": found.validation_results}))
        found = upstream_from_store(bytes.fromhex(persisted["store"]), format=MIME,
                                    validation_results=persisted["results"])
    signed = codec.embed_token(strip_manifest(upstream), TOKEN)
    out = embed(signed, facts(), ml_dsa_signer(), parent=found)
    report = trusted_report(out, MIME)
    assert codes(report, "failure") == EXPECTED_FAILURES
    ingredient = report["manifests"][report["active_manifest"]]["ingredients"][0]
    assert ingredient["relationship"] == "parentOf"
    assert ingredient["active_manifest"] == found.label
    assert "signingCredential.untrusted" in [s["code"] for s in
                                             ingredient["validation_results"]["activeManifest"]["failure"]]
    manifest = read_manifest(out)
    assert manifest.manifest_count == 2 and verify_manifest(out, verify_ml_dsa).is_valid
    if has_qpdf():
        assert qpdf_check(out).returncode == 0
    assert codec.extract_token(out) == TOKEN and page_texts(out) == list(PAGE_TEXTS)


def test_embedding_over_an_upstream_store_replaces_it() -> None:
    out = embed(_upstream(), facts(), ml_dsa_signer())
    assert read_manifest(out).manifest_count == 1
    assert codes(trusted_report(out, MIME), "failure") == EXPECTED_FAILURES


# -- hostile files ------------------------------------------------------------------------------------------


def _with_store(store: bytes, **catalog: bytes) -> bytes:
    """A hand-made PDF whose catalog's /AF names a file specification (7) of an embedded file stream (6)."""
    objects = simple_objects()
    objects[1] = b"<</Type/Catalog/Pages 2 0 R/AF%s>>" % catalog.get("af", b"[7 0 R]")
    objects[6] = catalog.get("stream_head", b"<</Length %d>>" % len(store)) + b"stream\n" + store + b"\nendstream"
    objects[7] = catalog.get("spec", b"<</Type/Filespec/AFRelationship/C2PA_Manifest/EF<</F 6 0 R>>>>")
    objects.update(catalog.get("extra", {}))
    return assemble_pdf(objects)


def _hand_made_xref_stream(objects: dict[int, bytes], overrides: dict[int, tuple[int, int, int]],
                           trailer: bytes = b"") -> bytes:
    """`objects` with an unfiltered cross-reference stream whose entries `overrides` replaces."""
    out, entries = bytearray(b"%PDF-1.5\n"), {}
    for number, body in sorted(objects.items()):
        entries[number] = (1, len(out), 0)
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    size = max(*objects, *overrides) + 2
    entries.update(overrides)
    entries[size - 1] = (1, len(out), 0)
    rows = b"".join(bytes([kind]) + first.to_bytes(4, "big") + bytes([second])
                    for kind, first, second in (entries.get(n, (0, 0, 0)) for n in range(size)))
    out += b"%d 0 obj\n<</Type/XRef/Size %d/W[1 4 1]/Root 1 0 R%s/Length %d>>stream\n" % (
        size - 1, size, trailer, len(rows)) + rows + b"\nendstream\nendobj\n"
    return bytes(out + b"startxref\n%d\n%%%%EOF\n" % entries[size - 1][1])


@functools.cache
def _good_store() -> bytes:
    return PDF_CARRIER.find(_signed("three-pages")[2]).store


def _nested(depth: int) -> bytes:
    return b"<</X" * depth + b" 1" + b">>" * depth


HOSTILE = {
    "length-short": lambda s: _with_store(s, stream_head=b"<</Length %d>>" % (len(s) - 10)),
    "length-long": lambda s: _with_store(s, stream_head=b"<</Length %d>>" % (len(s) + 10)),
    "length-past-eof": lambda s: _with_store(s, stream_head=b"<</Length %d>>" % (len(s) + 1_000_000)),
    "length-huge": lambda s: _with_store(s, stream_head=b"<</Length 99999999999>>"),
    "length-negative": lambda s: _with_store(s, stream_head=b"<</Length -5>>"),
    "length-is-the-stream": lambda s: _with_store(s, stream_head=b"<</Length 6 0 R>>"),
    "length-loop": lambda s: _with_store(s, stream_head=b"<</Length 8 0 R>>", extra={8: b"9 0 R", 9: b"8 0 R"}),
    "filtered": lambda s: _with_store(s, stream_head=b"<</Length %d/Filter/FlateDecode>>" % len(s)),
    "two-stores": lambda s: _with_store(s, af=b"[7 0 R 8 0 R]", extra={
        8: b"<</Type/Filespec/AFRelationship/C2PA_Manifest/EF<</F 6 0 R>>>>"}),
    "ef-not-a-stream": lambda s: _with_store(s, spec=b"<</AFRelationship/C2PA_Manifest/EF<</F 2 0 R>>>>"),
    "ef-missing": lambda s: _with_store(s, spec=b"<</AFRelationship/C2PA_Manifest>>"),
    "af-too-long": lambda s: _with_store(s, af=b"[" + b"7 0 R " * 300 + b"]"),
    "deep-spec": lambda s: _with_store(s, spec=_nested(200)),
    "deep-af": lambda s: _with_store(s, af=b"[" * 200 + b"]" * 200),
    "truncated-in-store": lambda s: _with_store(s)[: len(_with_store(s)) // 2],
}


@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_pdfs_raise_codec_errors_only(name: str) -> None:
    data = HOSTILE[name](_good_store())
    for action in (PDF_CARRIER.find, read_manifest, strip_manifest, validate_upstream,
                   lambda d: embed(d, facts(), ml_dsa_signer())):
        with pytest.raises((CorruptMedia, MediaTooLarge)):
            action(data)


def test_the_hostile_pdf_builder_makes_a_readable_pdf() -> None:
    data = _with_store(_good_store())
    assert PDF_CARRIER.find(data).store == _good_store()
    assert read_manifest(data).manifest_count == 1


HARMLESS = {
    "af-not-an-array": lambda s: _with_store(s, af=b"<</A 1>>"),
    "af-refers-to-a-reference-to-itself": lambda s: _with_store(s, af=b" 8 0 R", extra={8: b"8 0 R"}),
    "spec-not-a-dictionary": lambda s: _with_store(s, spec=b"[1 2 3]", af=b"[7 0 R 7 0 R]"),
    "relationship-a-loop": lambda s: _with_store(s, spec=b"<</AFRelationship 8 0 R/EF<</F 6 0 R>>>>",
                                                 extra={8: b"8 0 R"}),
    "direct-specification": lambda s: _with_store(s, af=b"[<</AFRelationship/C2PA_Manifest/EF<</F 6 0 R>>>>]"),
}


@pytest.mark.parametrize("name", HARMLESS)
def test_associated_files_that_are_no_c2pa_reference_carry_no_store(name: str) -> None:
    data = HARMLESS[name](_good_store())
    assert PDF_CARRIER.find(data) is None and read_manifest(data) is None and strip_manifest(data) == data


def test_huge_declared_store_is_too_large() -> None:
    with pytest.raises(MediaTooLarge):
        PDF_CARRIER.find(HOSTILE["length-huge"](_good_store()))


def test_cross_reference_loops_and_self_containing_object_streams_are_corrupt() -> None:
    store = _good_store()
    objects = simple_objects()
    objects[1] = b"<</Type/Catalog/Pages 2 0 R/AF[7 0 R]>>"
    objects[6] = b"<</Length %d>>stream\n" % len(store) + store + b"\nendstream"
    objects[7] = b"<</Type/Filespec/AFRelationship/C2PA_Manifest/EF<</F 6 0 R>>>>"
    assert read_manifest(_hand_made_xref_stream(objects, {})).manifest_count == 1
    cases = [
        _hand_made_xref_stream(objects, {7: (2, 7, 0)}),  # the file specification inside itself as an object stream
        _hand_made_xref_stream(objects, {7: (2, 10, 0), 10: (2, 7, 0)}),  # two object streams in each other
        _hand_made_xref_stream(objects, {}, trailer=b"/Prev 9"),  # /Prev at the stream itself (offset 9: obj 1)
    ]
    prev_self = _hand_made_xref_stream(objects, {})
    start = int(re.search(rb"startxref\n(\d+)", prev_self).group(1))
    cases.append(_hand_made_xref_stream(objects, {}, trailer=b"/Prev %d" % start))
    table = _with_store(store)
    table_start = int(re.search(rb"startxref\n(\d+)", table).group(1))
    cases.append(table.replace(b"/Root 1 0 R>>", b"/Root 1 0 R/Prev %d>>" % table_start))
    for data in cases:
        for action in (PDF_CARRIER.find, strip_manifest, lambda d: embed(d, facts(), ml_dsa_signer())):
            with pytest.raises((CorruptMedia, MediaTooLarge)):
                action(data)


def test_hostile_stores_in_our_update_raise_codec_errors_only() -> None:
    base = text_pdf()
    document = read_document(base)
    for store in hostile_stores(_good_store(), seed=11, mutations=120):
        planned = pdf_c2pa.plan_update(document, len(store))
        data = base + planned.head + store + planned.tail
        assert PDF_CARRIER.find(data).store == store
        with contextlib.suppress(CodecError):
            verify_manifest(data, verify_ml_dsa)
        with contextlib.suppress(CodecError):
            validate_upstream(data)
        assert strip_manifest(data) == base


def test_a_jumbf_bomb_in_the_store_is_refused() -> None:
    deep = b""
    for _ in range(5_000):
        deep = (8 + len(deep)).to_bytes(4, "big") + b"jumb" + deep
    boxes = b"\x00\x00\x00\x08free" * 200_000
    many = (8 + len(boxes)).to_bytes(4, "big") + b"jumb" + boxes
    for store in (deep, many):
        planned = pdf_c2pa.plan_update(read_document(text_pdf()), len(store))
        data = text_pdf() + planned.head + store + planned.tail
        with pytest.raises((CorruptMedia, MediaTooLarge)):
            read_manifest(data)


def test_our_update_is_recognised_when_the_store_holds_its_marker() -> None:
    original = codec.embed_token(text_pdf(), TOKEN)
    out = embed(original, facts(model="model" + pdf_c2pa.MARKER.decode()), ml_dsa_signer())
    assert out.count(pdf_c2pa.MARKER) == 2
    assert strip_manifest(out) == original and codec.strip_token(out) == text_pdf()
