"""POST /v1/sign and /v1/verify on plain text and HTML: the zero-width mark finds the record, the HTML meta
element carries the token, the content hash catches edits."""

import functools

import pytest

from media_codecs import get_codec
from media_codecs.text import zerowidth
from provenance.models import Record
from tests import factories
from tests.text_samples import HTML_PAGE, english
from tests.verification import uploads

pytestmark = pytest.mark.django_db


@pytest.fixture
def generator(org):
    return factories.make_generator(org=org, formats=["text"])


_sign = functools.partial(uploads.sign, model="writer-7")
_verify = uploads.verify


def test_plain_text_is_marked_and_found_through_the_mark(api_client, key_client, org, generator):
    text = english("\r\n").encode()
    response = _sign(key_client(org), generator, text, format="text")
    assert response.status_code == 201, response.content[:300]
    assert response["Content-Type"] == "text/plain; charset=utf-8" and response["X-Service-Format"] == "text"
    record = Record.objects.get(pk=response["X-Service-Record-Id"])
    assert zerowidth.strip_marks(response.content.decode()).encode() == text  # the input, exactly
    assert zerowidth.extract(response.content.decode()) == int(record.watermark_id, 16)
    result = _verify(api_client, response.content)
    assert (result["authentic"], result["confidence"], result["token_source"]) == (True, "high", "watermark")
    assert result["record_id"] == str(record.pk)
    quoted = response.content.decode().split("\r\n\r\n")[1].encode()  # one paragraph of 40+ words
    alone = _verify(api_client, quoted)
    assert (alone["token_source"], alone["record_id"], alone["tampered"]) == ("watermark", str(record.pk), True)


def test_edited_text_is_tampered_with_the_mark_still_found(api_client, key_client, org, generator):
    signed = _sign(key_client(org), generator, english().encode()).content.decode()
    result = _verify(api_client, signed.replace("Provenance", "Provenience", 1).encode())
    assert (result["authentic"], result["tampered"], result["reason"]) == (False, True, "content_tampered")
    assert result["signals"]["watermark_found"] is True


def test_html_carries_its_token_in_a_meta_element_and_its_mark_in_the_body(api_client, key_client, org, generator):
    response = _sign(key_client(org), generator, HTML_PAGE.encode())
    assert response.status_code == 201 and response["Content-Type"] == "text/html; charset=utf-8"
    html = get_codec("html")
    assert html.extract_token(response.content) == response["X-Service-Token"]
    result = _verify(api_client, response.content)
    assert (result["authentic"], result["confidence"], result["token_source"]) == (True, "high", "metadata")
    without_meta = _verify(api_client, html.strip_token(response.content))
    assert (without_meta["authentic"], without_meta["token_source"]) == (True, "watermark")


def test_text_too_short_for_the_mark_is_signed_and_verified_with_its_token(api_client, key_client, org, generator):
    response = _sign(key_client(org), generator, b"Two words.")
    assert response.status_code == 201 and response.content == b"Two words."
    assert Record.objects.get(pk=response["X-Service-Record-Id"]).watermark_id == "none"
    assert _verify(api_client, b"Two words.")["token_source"] == "content_hash"  # the unchanged text
    assert _verify(api_client, b"Two words!")["token_source"] == "none"
    result = _verify(api_client, b"Two words.", token=response["X-Service-Token"])
    assert (result["authentic"], result["token_source"], result["confidence"]) == (True, "provided", "medium")


@pytest.mark.parametrize("content", [b"\x00\x01\x02\x03 binary", b"caf\xe9 in latin-1", bytes(range(256))])
def test_binary_or_non_utf8_declared_as_text_is_400(key_client, org, generator, content):
    response = _sign(key_client(org), generator, content, format="text")
    assert response.status_code == 400 and response.json()["error"] == "format_not_supported"


def test_a_text_only_generator_does_not_sign_images(key_client, org, generator):
    from tests.media import photo_bytes

    response = _sign(key_client(org), generator, photo_bytes())
    assert response.status_code == 400 and response.json()["error"] == "format_not_supported"
