"""The file's exact content hash names its record: after token and watermark, before the perceptual hash.

The case that went wrong: organization A signs a picture (server-managed, watermarked); organization B
signs, client-managed, a file made from A's output (re-saved, so A's mark still reads in it). Verified
without a token, B's unchanged file was reported as a tampered copy of A's record.
"""

import base64
import io
from datetime import timedelta

import numpy as np
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from PIL import Image

from media_codecs import get_codec
from provenance.models import Record
from record_format import crypto
from record_format.hashing import content_hash_of_file
from record_format.payload import signed_payload_bytes
from tests import factories
from tests.audio import tagged_wav
from tests.media import decode, encode, photo_bytes, reencode_jpeg

pytestmark = pytest.mark.django_db


def _sign(client, generator, content: bytes):
    response = client.post("/v1/sign", {"content": io.BytesIO(content), "model": "diffusion-xl",
                                        "generator_id": str(generator.pk)}, format="multipart")
    assert response.status_code == 201, response.content[:300]
    return response


def _submit(client, org, content: bytes, *, model: str = "client-model", name: str = "client-gen") -> dict:
    """POST /v1/records for `content`, hashed as signing hashes it (the client package's rule)."""
    generator, seed = factories.make_client_generator(org=org, name=name)
    payload = {"content_hash": content_hash_of_file(content), "generator_id": str(generator.pk), "model": model,
               "watermark_id": "none"}
    body = {**payload, "signed_payload": payload,
            "signature": base64.b64encode(crypto.sign(seed, signed_payload_bytes(**payload))).decode()}
    response = client.post("/v1/records", body, format="json")
    assert response.status_code == 201, response.content[:300]
    return response.json()


def _verify(api_client, content: bytes, token: str | None = None) -> dict:
    body = {"content": io.BytesIO(content), **({"token": token} if token else {})}
    response = api_client.post("/v1/verify", body, format="multipart")
    assert response.status_code == 200, response.content[:300]
    return response.json()


@pytest.fixture
def org_a(db):
    return factories.make_org(name="Acme Labs")


@pytest.fixture
def org_b(db):
    return factories.make_org(name="Bravo Studio")


@pytest.fixture
def signed_by_a(key_client, org_a):
    generator = factories.make_generator(org=org_a, formats=["image"])
    return _sign(key_client(org_a), generator, photo_bytes("astronaut", "jpeg"))


def test_a_file_b_signed_from_as_output_names_b_not_a(api_client, key_client, org_b, signed_by_a):
    resaved = reencode_jpeg(signed_by_a.content, 92)  # A's token is gone, A's mark still reads
    a_mark = Record.objects.get(pk=signed_by_a["X-Service-Record-Id"]).watermark_id
    assert get_codec("jpeg").extract_token(resaved) is None
    assert f"{get_codec('jpeg').extract_watermark(resaved):016x}" == a_mark
    b_record = _submit(key_client(org_b), org_b, resaved)

    result = _verify(api_client, resaved)
    assert (result["authentic"], result["tampered"], result["token_source"]) == (True, False, "content_hash")
    assert result["record_id"] == b_record["record_id"]
    assert result["provenance"]["org"] == "Bravo Studio" and result["provenance"]["model"] == "client-model"
    # A's mark is not B's: it does not count for B's record, and the words say whose it is.
    assert result["signals"] == {"watermark_found": False, "record_found": True, "signature_valid": True}
    assert result["confidence"] == "medium" and "reason" not in result
    assert result["summary"].startswith("This file is exactly the content that Bravo Studio signed with the model "
                                        "client-model on ")
    assert "It also carries the invisible watermark of content that Acme Labs signed" in result["summary"]


def test_as_own_output_still_names_a(api_client, key_client, org_a, org_b, signed_by_a):
    _submit(key_client(org_b), org_b, reencode_jpeg(signed_by_a.content, 92))
    result = _verify(api_client, signed_by_a.content)
    assert (result["record_id"], result["token_source"], result["confidence"]) == (
        signed_by_a["X-Service-Record-Id"], "xmp", "high")


def test_a_resaved_copy_nobody_signed_is_still_a_changed_copy_of_as_content(api_client, key_client, org_b,
                                                                            signed_by_a):
    _submit(key_client(org_b), org_b, reencode_jpeg(signed_by_a.content, 92))
    other_copy = reencode_jpeg(signed_by_a.content, 80)  # neither A's file nor B's: the watermark answers
    result = _verify(api_client, other_copy)
    assert (result["token_source"], result["record_id"], result["reason"]) == (
        "watermark", signed_by_a["X-Service-Record-Id"], "content_tampered")
    assert result["signals"]["watermark_found"] is True
    assert result["summary"].startswith("This is a changed copy of content that Acme Labs signed")


def test_an_explicit_token_is_answered_about_that_token(api_client, key_client, org_b, signed_by_a):
    resaved = reencode_jpeg(signed_by_a.content, 92)
    _submit(key_client(org_b), org_b, resaved)
    result = _verify(api_client, resaved, token=signed_by_a["X-Service-Token"])
    assert (result["token_source"], result["record_id"], result["reason"]) == (
        "provided", signed_by_a["X-Service-Record-Id"], "content_tampered")


def test_an_embedded_token_of_a_changed_file_gives_way_to_the_exact_record(api_client, key_client, org_b,
                                                                           signed_by_a):
    codec = get_codec("jpeg")
    pixels = np.asarray(decode(signed_by_a.content).convert("RGB")).copy()
    pixels[:40, :40] = 0  # B edits A's picture and keeps A's metadata
    edited = codec.embed_token(encode(Image.fromarray(pixels), "jpeg", quality=95), signed_by_a["X-Service-Token"])
    assert codec.extract_token(edited) == signed_by_a["X-Service-Token"]
    b_record = _submit(key_client(org_b), org_b, edited)
    result = _verify(api_client, edited)
    assert (result["token_source"], result["record_id"], result["authentic"]) == (
        "content_hash", b_record["record_id"], True)
    assert "Its metadata carries a token for different content, which Acme Labs signed" in result["summary"]


def test_a_damaged_embedded_token_on_an_unchanged_file_gives_way_to_the_exact_record(api_client, signed_by_a):
    forged = get_codec("jpeg").embed_token(signed_by_a.content, "svc_" + "A" * 44)
    result = _verify(api_client, forged)  # the token container is outside the hash: the file is unchanged
    assert (result["token_source"], result["record_id"], result["authentic"]) == (
        "content_hash", signed_by_a["X-Service-Record-Id"], True)
    assert result["signals"]["watermark_found"] is True and result["confidence"] == "high"


def test_an_unchanged_client_signed_file_is_found_without_its_token(api_client, key_client, org_b):
    content = photo_bytes("coffee", "png")
    record = _submit(key_client(org_b), org_b, content)
    result = _verify(api_client, content)
    assert (result["token_source"], result["record_id"], result["authentic"], result["confidence"]) == (
        "content_hash", record["record_id"], True, "medium")
    assert result["signals"] == {"watermark_found": False, "record_found": True, "signature_valid": True}


@pytest.mark.parametrize("fmt", ["webp", "wav", "txt", "opaque"])
def test_unchanged_client_signed_files_of_other_formats_are_found(api_client, key_client, org_b, fmt):
    content = {"webp": photo_bytes("rocket", "webp"), "wav": tagged_wav(), "txt": b"A poem nobody else wrote.\n",
               "opaque": b"\x00\x01 bytes no codec reads"}[fmt]
    record = _submit(key_client(org_b), org_b, content)
    result = _verify(api_client, content)
    assert (result["token_source"], result["record_id"], result["authentic"]) == (
        "content_hash", record["record_id"], True)


def test_several_records_of_one_hash_the_earliest_answers(api_client, key_client, org_a, org_b):
    content = photo_bytes("chelsea", "png")
    first = _submit(key_client(org_a), org_a, content)
    second = _submit(key_client(org_b), org_b, content)
    assert _verify(api_client, content)["record_id"] == first["record_id"]
    # Earliest by signed_at, not by insertion order.
    Record.objects.filter(pk=second["record_id"]).update(
        signed_at=Record.objects.get(pk=first["record_id"]).signed_at - timedelta(seconds=1))
    assert _verify(api_client, content)["record_id"] == second["record_id"]


def test_a_crowd_of_records_sharing_a_hash_is_one_statement(api_client, key_client, org_a):
    content = photo_bytes("coffee", "jpeg")
    first = _submit(key_client(org_a), org_a, content)
    generator, _ = factories.make_client_generator(org=org_a, name="crowd")
    clones = [Record(org=org_a, generator=generator, key=generator.keys.first(), model="m", watermark_id="none",
                     content_hash=content_hash_of_file(content), signature=b"x") for _ in range(200)]
    Record.objects.bulk_create(clones)
    with CaptureQueriesContext(connection) as queries:
        result = _verify(api_client, content)
    assert result["record_id"] == first["record_id"]
    lookups = [q["sql"] for q in queries.captured_queries if "provenance_record" in q["sql"]
               and q["sql"].startswith("SELECT")]
    assert len(lookups) == 1, lookups  # no pHash search after an exact match


def test_a_perceptual_match_is_only_reported_without_an_exact_match(api_client, key_client, org_a):
    content = photo_bytes("coffee", "png")
    codec = get_codec("png")
    generator, seed = factories.make_client_generator(org=org_a)
    body = factories.record_body(generator=generator, seed=seed, content=b"another file",
                                 phash=codec.fingerprint(content))
    near = key_client(org_a).post("/v1/records", body, format="json").json()
    exact = _submit(key_client(org_a), org_a, content)
    result = _verify(api_client, content)
    assert (result["token_source"], result["record_id"]) == ("content_hash", exact["record_id"])
    changed = encode(decode(content).convert("RGB"), "jpeg", quality=90)
    result = _verify(api_client, changed)
    assert (result["token_source"], result["record_id"], result["reason"]) == (
        "phash", near["record_id"], "content_tampered")


@pytest.mark.parametrize("family", [None, "image"])
def test_a_client_record_claiming_as_watermark_id_does_not_take_as_copies(api_client, key_client, org_b,
                                                                          signed_by_a, family):
    # The watermark id of A's record is public (GET /v1/records/:id); B signs a record that names it, also
    # one that says what its content is (a client record's `format` does not make it server-marked).
    a_mark = api_client.get(f"/v1/records/{signed_by_a['X-Service-Record-Id']}").json()["watermark_id"]
    generator, seed = factories.make_client_generator(org=org_b)
    claim = factories.record_body(generator=generator, seed=seed, content=b"anything", watermark_id=a_mark)
    if family:
        claim["format"] = family
    assert key_client(org_b).post("/v1/records", claim, format="json").status_code == 201
    result = _verify(api_client, reencode_jpeg(signed_by_a.content, 80))  # a changed copy of A's picture
    assert (result["token_source"], result["record_id"]) == ("watermark", signed_by_a["X-Service-Record-Id"])
    assert result["provenance"]["org"] == "Acme Labs"


def test_a_client_record_naming_the_mark_in_its_file_does_not_make_the_mark_its_own(api_client, key_client, org_b,
                                                                                    signed_by_a):
    resaved = reencode_jpeg(signed_by_a.content, 92)
    a_mark = Record.objects.get(pk=signed_by_a["X-Service-Record-Id"]).watermark_id
    generator, seed = factories.make_client_generator(org=org_b)
    payload = {"content_hash": content_hash_of_file(resaved), "generator_id": str(generator.pk), "model": "m",
               "watermark_id": a_mark}
    body = {**payload, "signed_payload": payload,
            "signature": base64.b64encode(crypto.sign(seed, signed_payload_bytes(**payload))).decode()}
    b_record = key_client(org_b).post("/v1/records", {**body, "format": "image"}, format="json").json()
    for token in (None, b_record["token"]):
        result = _verify(api_client, resaved, token=token)
        assert result["record_id"] == b_record["record_id"] and result["authentic"] is True
        assert result["signals"]["watermark_found"] is False and result["confidence"] == "medium"
