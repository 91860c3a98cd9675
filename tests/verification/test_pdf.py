"""POST /v1/sign and /v1/verify with PDFs: the token travels in an incremental update's XMP."""

import functools

import pytest

from media_codecs import get_codec
from tests import factories
from tests.pdf_samples import PAGE_TEXTS, encrypted, page_texts, text_pdf, with_annotation
from tests.verification import uploads

pytestmark = pytest.mark.django_db


@pytest.fixture
def generator(org):
    return factories.make_generator(org=org, formats=["text"])


_sign = functools.partial(uploads.sign, model="writer-1")
_verify = uploads.verify


def test_a_signed_pdf_comes_back_as_a_pdf_with_its_pages(key_client, org, generator):
    original = text_pdf(PAGE_TEXTS)
    response = _sign(key_client(org), generator, original, format="text")
    assert response.status_code == 201, response.content[:300]
    assert (response["Content-Type"], response["X-Service-Format"]) == ("application/pdf", "text")
    assert response.content.startswith(original) and page_texts(response.content) == list(PAGE_TEXTS)
    assert get_codec("pdf").extract_token(response.content) == response["X-Service-Token"]


def test_a_signed_pdf_verifies_with_medium_confidence(api_client, key_client, org, generator):
    signed = _sign(key_client(org), generator, text_pdf())
    result = _verify(api_client, signed.content)
    assert result == {"authentic": True, "tampered": False, "confidence": "medium", "token_source": "xmp",
                      "signals": {"watermark_found": False, "record_found": True, "signature_valid": True},
                      "provenance": {"org": org.name, "model": "writer-1",
                                     "signed_at": result["provenance"]["signed_at"]},
                      "summary": uploads.unchanged_unmarked_summary(result),
                      "record_id": signed["X-Service-Record-Id"], "log": {"status": "pending"},
                      "signature_timestamp": None, "c2pa": None, "disclosure": uploads.default_disclosure(result)}


def test_a_byte_changed_in_a_content_stream_is_tampered(api_client, key_client, org, generator):
    signed = bytearray(_sign(key_client(org), generator, text_pdf()).content)
    at = signed.index(b"Provenance matters")
    signed[at] = ord("p")
    result = _verify(api_client, bytes(signed))
    assert (result["authentic"], result["tampered"], result["token_source"], result["reason"]) == (
        False, True, "xmp", "content_tampered")


def test_an_update_appended_after_ours_is_tampered(api_client, key_client, org, generator):
    signed = _sign(key_client(org), generator, text_pdf())
    annotated = with_annotation(signed.content)
    result = _verify(api_client, annotated)
    assert (result["tampered"], result["token_source"], result["record_id"]) == (
        True, "xmp", signed["X-Service-Record-Id"])


def test_an_unsigned_pdf_has_no_provenance(api_client):
    result = _verify(api_client, text_pdf())
    assert (result["authentic"], result["confidence"], result["token_source"], result["reason"]) == (
        False, "none", "none", "no_provenance_found")


def test_an_encrypted_pdf_cannot_be_signed(key_client, org, generator):
    response = _sign(key_client(org), generator, encrypted(text_pdf()))
    assert response.status_code == 400 and response.json()["error"] == "format_not_supported"


def test_a_pdf_declared_as_an_image_is_not_supported(key_client, org):
    image_generator = factories.make_generator(org=org, name="images", formats=["image", "text"])
    response = _sign(key_client(org), image_generator, text_pdf(), format="image")
    assert response.status_code == 400 and response.json()["error"] == "format_not_supported"
