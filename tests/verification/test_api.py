"""POST /v1/verify and /v1/verify/batch on real photographs, through every resolution path."""

import base64
import io
import json
import uuid
from datetime import datetime
from types import SimpleNamespace

import pytest
from dilithium_py.ml_dsa import ML_DSA_65
from PIL import Image

from audit.models import AuditEvent
from core.keyring import token_mac_keys
from media_codecs import get_codec
from media_codecs.image.phash import phash_hex
from provenance.tokens import mint_token
from tests import factories
from tests.media import decode, encode, photo_bytes, reencode_jpeg, strip_metadata
from tests.verification import uploads

pytestmark = pytest.mark.django_db
URL = "/v1/verify"


@pytest.fixture
def generator(org):
    return factories.make_generator(org=org, formats=["image"])


def _sign(client, generator, content: bytes):
    response = client.post("/v1/sign", {"content": io.BytesIO(content), "model": "diffusion-xl",
                                        "generator_id": str(generator.pk)}, format="multipart")
    assert response.status_code == 201
    return response


def _day(result: dict) -> str:
    signed_at = datetime.fromisoformat(result["provenance"]["signed_at"])
    return f"{signed_at.day} {signed_at:%B %Y}"


def _verify(api_client, content: bytes, token: str | None = None) -> dict:
    body = {"content": io.BytesIO(content)}
    if token is not None:
        body["token"] = token
    response = api_client.post(URL, body, format="multipart")
    assert response.status_code == 200, response.content[:300]
    return response.json()


@pytest.mark.parametrize("fmt", ["jpeg", "png", "webp"])
def test_signed_content_verifies_with_high_confidence(api_client, key_client, org, generator, fmt):
    signed = _sign(key_client(org), generator, photo_bytes("coffee", fmt))
    result = _verify(api_client, signed.content)
    assert result == {"authentic": True, "tampered": False, "confidence": "high", "token_source": "xmp",
                      "signals": {"watermark_found": True, "record_found": True, "signature_valid": True},
                      "provenance": {"org": org.name, "model": "diffusion-xl",
                                     "signed_at": result["provenance"]["signed_at"]},
                      "record_id": signed["X-Service-Record-Id"], "log": {"status": "pending"},
                      "signature_timestamp": None, "c2pa": None, "disclosure": uploads.default_disclosure(result),
                      "summary": f"This file is exactly the content that {org.name} signed with the model "
                                 f"diffusion-xl on {_day(result)}: its signature checks out and the content has "
                                 "not changed since. It also carries that signing's invisible watermark."}


@pytest.mark.parametrize("fmt", ["jpeg", "png", "webp"])
def test_without_metadata_the_watermark_finds_the_record(api_client, key_client, org, generator, fmt):
    signed = _sign(key_client(org), generator, photo_bytes("astronaut", fmt)).content
    stripped = strip_metadata(signed, fmt)
    assert get_codec(fmt).extract_token(stripped) is None
    result = _verify(api_client, stripped)
    assert (result["token_source"], result["authentic"], result["confidence"]) == ("watermark", True, "high")


def test_a_reencoded_image_is_tampered_but_still_watermarked(api_client, key_client, org, generator):
    signed = _sign(key_client(org), generator, photo_bytes("chelsea", "jpeg"))
    result = _verify(api_client, reencode_jpeg(signed.content, 75))
    assert result["signals"] == {"watermark_found": True, "record_found": True, "signature_valid": True}
    assert (result["tampered"], result["authentic"], result["reason"]) == (True, False, "content_tampered")
    assert result["token_source"] == "watermark" and result["confidence"] == "low"
    assert result["record_id"] == signed["X-Service-Record-Id"]


@pytest.mark.parametrize("photo", ["astronaut", "retina"])
def test_a_small_reshared_copy_is_found_by_its_watermark(api_client, key_client, org, generator, photo):
    # issue 19: short side 256 px (Lanczos), JPEG 75, no metadata: the second watermark layer names the
    # record before the pHash is consulted (astronaut is 512 px, retina 1411)
    signed = _sign(key_client(org), generator, photo_bytes(photo, "jpeg"))
    image = decode(signed.content).convert("RGB")
    factor = 256 / min(image.size)
    copy = image.resize((round(image.width * factor), round(image.height * factor)), Image.Resampling.LANCZOS)
    result = _verify(api_client, encode(copy, "jpeg", quality=75))
    assert result["token_source"] == "watermark"
    assert result["signals"] == {"watermark_found": True, "record_found": True, "signature_valid": True}
    assert result["record_id"] == signed["X-Service-Record-Id"]
    assert (result["tampered"], result["confidence"]) == (True, "low")


def test_an_explicit_token_is_used_first(api_client, key_client, org, generator):
    signed = _sign(key_client(org), generator, photo_bytes())
    result = _verify(api_client, signed.content, token=signed["X-Service-Token"])
    assert (result["token_source"], result["authentic"]) == ("provided", True)


def test_an_altered_token_is_invalid(api_client, key_client, org, generator):
    signed = _sign(key_client(org), generator, photo_bytes())
    token = signed["X-Service-Token"]
    altered = token[:-1] + ("A" if token[-1] != "A" else "B")
    result = _verify(api_client, signed.content, token=altered)
    assert (result["authentic"], result["reason"], result["record_id"], result["provenance"]) == (
        False, "invalid_token", None, None)


def test_a_forged_xmp_token_is_invalid(api_client, key_client, org, generator):
    # On a file nobody signed: a signed file keeps its content hash, which finds its record
    # (tests/verification/test_exact_hash.py).
    forged = get_codec("jpeg").embed_token(photo_bytes("rocket", "jpeg"), "svc_" + "A" * 44)
    result = _verify(api_client, forged)
    assert (result["token_source"], result["reason"]) == ("xmp", "invalid_token")


def test_a_token_for_an_unknown_record_is_record_not_found(api_client):
    token = mint_token(uuid.uuid4(), token_mac_keys()[0])
    result = _verify(api_client, photo_bytes(), token=token)
    assert (result["reason"], result["signals"]["record_found"], result["confidence"]) == (
        "record_not_found", False, "low")


def test_a_revoked_generators_content_has_an_invalid_signature(api_client, key_client, org, generator):
    signed = _sign(key_client(org), generator, photo_bytes()).content
    key_client(org).put(f"/v1/generators/{generator.pk}/revoke")
    result = _verify(api_client, signed)
    assert (result["authentic"], result["reason"]) == (False, "signature_invalid")
    assert result["signals"]["signature_valid"] is False and result["signals"]["record_found"] is True


def test_unsigned_content_has_no_provenance(api_client):
    result = _verify(api_client, photo_bytes("rocket", "png"))
    assert result == {"authentic": False, "tampered": False, "confidence": "none", "token_source": "none",
                      "signals": {"watermark_found": False, "record_found": False, "signature_valid": False},
                      "provenance": None, "reason": "no_provenance_found", "record_id": None,
                      "log": None, "signature_timestamp": None, "c2pa": None, "disclosure": None,
                      "summary": "No provenance was found: no token, watermark or signed record "
                                 "matches this file. This makes no claim either way: absence of "
                                 "provenance is not evidence that a person made it."}


@pytest.mark.parametrize("garbage", [b"not an image at all", b"\xff\xd8\xff\xe0" + b"\x00" * 100,
                                     b"\x89PNG\r\n\x1a\n" + b"\xff" * 64])
def test_garbage_gets_a_result_not_an_error(api_client, garbage):
    assert _verify(api_client, garbage)["reason"] == "no_provenance_found"


def test_a_client_record_with_a_phash_is_found_without_token_or_watermark(api_client, key_client, org):
    content = photo_bytes("coffee", "png")
    codec = get_codec("png")
    generator, seed = factories.make_client_generator(org=org)
    body = factories.record_body(generator=generator, seed=seed, content=content,
                                 phash=codec.fingerprint(content))
    record_id = key_client(org).post("/v1/records", body, format="json").json()["record_id"]
    # The unchanged file is found by its exact hash; a converted copy by its pHash, as a changed copy.
    result = _verify(api_client, encode(decode(content).convert("RGB"), "jpeg", quality=90))
    assert (result["token_source"], result["record_id"], result["tampered"]) == ("phash", record_id, True)
    assert (result["confidence"], result["reason"]) == ("low", "content_tampered")


def test_a_flat_picture_is_never_found_through_another_flat_pictures_hash(api_client, key_client, org, generator):
    # Every flat picture has one pHash, so a lookup by it would name an unrelated record as tampered.
    grey, blue = (encode(Image.new("RGB", (256, 192), colour), "png") for colour in ((128, 128, 128), (20, 60, 200)))
    signed = _sign(key_client(org), generator, grey)
    assert key_client(org).get(f"/v1/records/{signed['X-Service-Record-Id']}").json()["phash"] is None
    client_generator, seed = factories.make_client_generator(org=org)
    body = factories.record_body(generator=client_generator, seed=seed, content=grey, phash=phash_hex(Image.open(
        io.BytesIO(grey))))
    assert key_client(org).post("/v1/records", body, format="json").status_code == 201
    result = _verify(api_client, blue)
    assert (result["reason"], result["token_source"], result["record_id"]) == ("no_provenance_found", "none", None)


def test_verification_is_audited_for_the_owning_organization(api_client, key_client, org, generator, emitted):
    signed = _sign(key_client(org), generator, photo_bytes()).content
    _verify(api_client, reencode_jpeg(signed))
    event = AuditEvent.objects.get(type="verify")
    assert event.org_id == org.pk and event.metadata["tampered"] is True
    kinds = [kind for _, kind, _ in emitted]
    assert kinds[-2:] == ["verify.attempted", "verify.tamper_detected"]


def test_the_signed_record_verifies_with_dilithium_py_from_public_endpoints(api_client, key_client, org, generator):
    record_id = _sign(key_client(org), generator, photo_bytes())["X-Service-Record-Id"]
    record = api_client.get(f"/v1/records/{record_id}").json()
    keys = api_client.get(f"/v1/keys/{record['generator_id']}").json()["public_keys"]
    public_key = base64.b64decode(next(k["key"] for k in keys if k["kid"] == record["kid"]))
    message = json.dumps(record["signed_payload"], sort_keys=True, separators=(",", ":")).encode()
    assert ML_DSA_65.verify(public_key, message, base64.b64decode(record["signature"]))


def test_verify_needs_a_file(api_client):
    response = api_client.post(URL, {"token": "svc_x"}, format="multipart")
    assert response.status_code == 400 and "content" in response.json()["details"]


def test_verify_is_limited_per_ip(api_client, settings):
    settings.VERIFY_RATE_PER_MINUTE = 1
    assert api_client.post(URL, {"content": io.BytesIO(b"x")}, format="multipart").status_code == 200
    response = api_client.post(URL, {"content": io.BytesIO(b"x")}, format="multipart")
    assert response.status_code == 429 and "Retry-After" in response


def test_the_batch_answers_in_input_order(api_client, key_client, org, generator):
    signed = _sign(key_client(org), generator, photo_bytes()).content
    items = [{"content": base64.b64encode(signed).decode()},
             {"content": base64.b64encode(b"garbage").decode()},
             {"content": base64.b64encode(signed).decode(), "token": "svc_bad"}]
    response = api_client.post(f"{URL}/batch", {"items": items}, format="json")
    assert response.status_code == 200
    results = response.json()
    assert isinstance(results, list) and len(results) == 3
    assert [r["authentic"] for r in results] == [True, False, False]
    assert [r.get("reason") for r in results] == [None, "no_provenance_found", "invalid_token"]


@pytest.mark.parametrize("body", [{"items": [{"content": "eA=="}] * 51}, {"items": []}, {},
                                  {"items": [{"content": "not base64!"}]}, {"items": [{"token": "x"}]}])
def test_bad_batches_are_400(api_client, body):
    response = api_client.post(f"{URL}/batch", body, format="json")
    assert response.status_code == 400 and response.json()["error"] == "validation_error"


def test_a_batch_counts_as_many_verifications_as_it_has_items(api_client, settings):
    settings.VERIFY_RATE_PER_MINUTE = 5
    items = [{"content": base64.b64encode(b"x").decode()}] * 5
    assert api_client.post(f"{URL}/batch", {"items": items}, format="json").status_code == 200
    response = api_client.post(f"{URL}/batch", {"items": items[:1]}, format="json")
    assert response.status_code == 429 and response.json()["error"] == "rate_limited"
    settings.VERIFY_RATE_PER_MINUTE = 12
    too_many = api_client.post(f"{URL}/batch", {"items": items + items}, format="json")
    assert too_many.status_code == 429  # 6 + 1 + 10 > 12: refused before any item is verified


@pytest.mark.parametrize("signed", [True, False], ids=["signed", "unsigned"])
def test_a_png_verification_parses_and_decodes_the_file_once(api_client, key_client, org, generator,
                                                             monkeypatch, signed):
    content = photo_bytes("coffee", "png")
    if signed:
        content = _sign(key_client(org), generator, content).content
    codec_class = type(get_codec("png"))
    calls = {"parse": 0, "decode": 0}

    def counted(name):
        original = getattr(codec_class, name)

        def wrapper(self, data):
            calls[name] += 1
            return original(self, data)
        return wrapper

    monkeypatch.setattr(codec_class, "parse", counted("parse"))
    monkeypatch.setattr(codec_class, "decode", counted("decode"))
    result = _verify(api_client, content)
    assert result["authentic"] is signed
    assert calls == {"parse": 1, "decode": 1}  # token, watermark, pHash and hash all share one parse


def test_the_result_discloses_what_the_generator_declared(api_client, key_client, org):
    declared = {"name": "g", "provider_name": "Acme AI", "system_name": "Acme Diffusion", "system_version": "3.1",
                "digital_source_type": "compositeWithTrainedAlgorithmicMedia"}
    generator_id = key_client(org).post("/v1/generators", declared, format="json").json()["generator_id"]
    signed = _sign(key_client(org), SimpleNamespace(pk=generator_id), photo_bytes())
    result = _verify(api_client, strip_metadata(signed.content, "jpeg"))  # found through the mark: the record discloses
    assert result["token_source"] == "watermark"
    assert result["disclosure"] == {
        "digital_source_type": "http://cv.iptc.org/newscodes/digitalsourcetype/compositeWithTrainedAlgorithmicMedia",
        "provider_name": "Acme AI", "system_name": "Acme Diffusion", "system_version": "3.1",
        "created": result["provenance"]["signed_at"], "identifier": signed["X-Service-Record-Id"]}
