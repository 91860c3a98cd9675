"""POST /v1/records/:record_id/c2pa/embed: the signed asset comes back with a C2PA manifest that c2pa-python
parses (only the ML-DSA algorithm unknown to it) and our verifier checks; every error row of the spec."""

import base64
import datetime
import io

import numpy as np
import pytest
from cryptography.hazmat.primitives.asymmetric.mldsa import MLDSA65PrivateKey
from dilithium_py.ml_dsa import ML_DSA_65

from billing.models import UsageCounter
from generators.services import generator_revoke, generator_rotate_key
from media_codecs import get_codec
from media_codecs.c2pa import ManifestFacts, embed, read_manifest, self_signed_certificate, strip_manifest
from media_codecs.c2pa.manifest import sig_structure
from provenance.models import Record
from tests import factories
from tests.c2pa_upstream import active_codes as _codes
from tests.c2pa_upstream import c2pa_report as _c2pa_report
from tests.media import decode, encode, photo_bytes
from tests.verification.uploads import sign, verify

pytestmark = pytest.mark.django_db
c2pa = pytest.importorskip("c2pa")

EXPECTED_FAILURES = ["algorithm.unsupported", "claimSignature.mismatch"]
MODEL = "diffusion-xl"


def _url(record_id) -> str:
    return f"/v1/records/{record_id}/c2pa/embed"


def _embed(client, record_id, content: bytes):
    return client.post(_url(record_id), {"content": io.BytesIO(content)}, format="multipart")


@pytest.fixture
def growth(growth_org):
    factories.make_user(org=growth_org, role="owner")
    return growth_org


@pytest.fixture
def generator(growth):
    return factories.make_generator(org=growth, formats=["image"])


@pytest.fixture
def client(key_client, growth):
    return key_client(growth)


def _signed(client, generator, content: bytes) -> tuple[bytes, str]:
    response = sign(client, generator, content, model=MODEL)
    assert response.status_code == 201, response.content[:300]
    return response.content, response["X-Service-Record-Id"]


def _png_with_chunks() -> bytes:
    from PIL import PngImagePlugin

    info = PngImagePlugin.PngInfo()
    info.add_text("Comment", "made for a test")
    return encode(decode(photo_bytes("chelsea", "png")), "png", pnginfo=info, dpi=(300, 300))


SAMPLES = {
    "jpeg-baseline": lambda: photo_bytes("astronaut", "jpeg"),
    "jpeg-progressive": lambda: encode(decode(photo_bytes("coffee", "png")), "jpeg", quality=85, progressive=True),
    "png-plain": lambda: photo_bytes("astronaut", "png"),
    "png-extra-chunks": _png_with_chunks,
}


@pytest.mark.parametrize("name", SAMPLES)
def test_the_embedded_asset_reads_in_c2pa_python_and_verifies_with_us(client, generator, api_client, name):
    fmt = name.split("-")[0]
    signed, record_id = _signed(client, generator, SAMPLES[name]())
    used_before = UsageCounter.objects.get(org=generator.org).signatures_used
    response = _embed(client, record_id, signed)
    assert response.status_code == 200, response.content[:300]
    assert response["Content-Type"] == f"image/{fmt}"
    embedded = response.content
    assert UsageCounter.objects.get(org=generator.org).signatures_used == used_before  # consumes no signature

    report = _c2pa_report(embedded, f"image/{fmt}")
    assert _codes(report, "failure") == EXPECTED_FAILURES
    assert _codes(report, "success") == ["assertion.hashedURI.match"] * 4 + ["assertion.dataHash.match"]
    manifest = report["manifests"][report["active_manifest"]]
    provenance = next(a for a in manifest["assertions"] if a["label"] == "service.provenance")["data"]
    assert provenance["record_id"] == record_id and provenance["model"] == MODEL
    assert provenance["generator_id"] == str(generator.pk) and provenance["signature_algorithm"] == "ml-dsa-65"

    # Only the store was added: the pixels and our XMP token are untouched.
    codec = get_codec(fmt)
    assert strip_manifest(embedded) == signed
    assert codec.extract_token(embedded) == codec.extract_token(signed) == provenance["token"]
    assert np.array_equal(np.asarray(decode(embedded)), np.asarray(decode(signed)))

    result = verify(api_client, embedded)
    assert (result["authentic"], result["token_source"], result["confidence"]) == (True, "c2pa", "high")
    assert result["record_id"] == record_id and result["signals"]["watermark_found"]


def test_the_cose_signature_verifies_with_dilithium_py_from_the_public_key_endpoint(client, generator, api_client):
    signed, record_id = _signed(client, generator, photo_bytes("astronaut", "jpeg"))
    manifest = read_manifest(_embed(client, record_id, signed).content)
    assert manifest.alg == -49 and manifest.public_key_url.endswith(f"/v1/keys/{generator.pk}")
    keys = api_client.get(f"/v1/keys/{generator.pk}").json()
    public = next(k for k in keys["public_keys"] if k["kid"] == manifest.kid)
    message = sig_structure(manifest.protected_bytes, manifest.claim_bytes)
    assert ML_DSA_65.verify(base64.b64decode(public["key"]), message, manifest.signature)


def test_a_flipped_pixel_byte_is_tampered_and_a_stripped_manifest_falls_back(client, generator, api_client):
    signed, record_id = _signed(client, generator, photo_bytes("astronaut", "png"))
    embedded = _embed(client, record_id, signed).content
    flipped = bytearray(embedded)
    idat = embedded.index(b"IDAT") + 100
    flipped[idat] ^= 0x01
    from media_codecs.image import png

    chunks, trailer = png.parse_chunks(bytes(flipped))  # keep the CRCs valid: only the pixels lie
    flipped = png.assemble([png.make_chunk(c.type, c.data) for c in chunks], trailer)
    result = verify(api_client, flipped)
    assert result["token_source"] == "c2pa" and result["tampered"] and not result["authentic"]
    assert result["reason"] == "content_tampered"

    without_manifest = verify(api_client, strip_manifest(embedded))
    assert (without_manifest["token_source"], without_manifest["authentic"]) == ("xmp", True)
    bare = get_codec("png").strip_token(embedded)
    assert verify(api_client, bare)["token_source"] == "watermark"


def test_a_manifest_signed_by_another_key_is_signature_invalid(client, generator, api_client):
    signed, record_id = _signed(client, generator, photo_bytes("astronaut", "jpeg"))
    genuine = read_manifest(_embed(client, record_id, signed).content)
    forger = MLDSA65PrivateKey.generate()
    now = datetime.datetime.now(datetime.UTC)
    certificate = self_signed_certificate(forger, common_name="forger", organization="Forger", not_before=now,
                                          not_after=now + datetime.timedelta(days=1))
    facts = ManifestFacts(record_id=record_id, model=MODEL, generator_id=str(generator.pk), kid=genuine.kid,
                          token=genuine.provenance["token"], certificate_chain=(certificate,))
    forged = embed(signed, facts, forger.sign)
    result = verify(api_client, forged)
    assert result["token_source"] == "c2pa" and not result["signals"]["signature_valid"] and not result["authentic"]
    assert result["reason"] == "signature_invalid" and not result["tampered"]


def test_a_manifest_naming_another_record_is_signature_invalid(client, generator, api_client):
    signed, record_id = _signed(client, generator, photo_bytes("astronaut", "jpeg"))
    other_signed, other_id = _signed(client, generator, photo_bytes("camera", "jpeg"))
    genuine = read_manifest(_embed(client, other_id, other_signed).content)
    from generators.selectors import current_key
    from generators.services import generator_signing_seed
    from record_format import crypto

    seed = generator_signing_seed(current_key(generator_id=generator.pk))
    facts = ManifestFacts(record_id=other_id, model=MODEL, generator_id=str(generator.pk), kid=genuine.kid,
                          token=read_manifest(_embed(client, record_id, signed).content).provenance["token"],
                          certificate_chain=tuple(genuine.certificate_chain))
    mixed = embed(signed, facts, lambda message: crypto.sign(seed, message))
    result = verify(api_client, mixed)
    assert result["record_id"] == record_id and result["reason"] == "signature_invalid"


def test_embedding_twice_replaces_the_manifest(client, generator, api_client):
    signed, record_id = _signed(client, generator, photo_bytes("astronaut", "jpeg"))
    once = _embed(client, record_id, signed).content
    twice = _embed(client, record_id, once)
    assert twice.status_code == 200
    assert read_manifest(twice.content).manifest_count == 1
    assert strip_manifest(twice.content) == signed
    assert _codes(_c2pa_report(twice.content, "image/jpeg"), "failure") == EXPECTED_FAILURES


def test_after_a_key_rotation_the_manifest_is_signed_with_the_new_key_and_verifies(client, generator, api_client):
    signed, record_id = _signed(client, generator, photo_bytes("astronaut", "jpeg"))
    new_key = generator_rotate_key(generator=generator, public_key=None)
    embedded = _embed(client, record_id, signed).content
    assert read_manifest(embedded).kid == new_key.kid
    assert verify(api_client, embedded)["authentic"]


# --- the spec's error rows ----------------------------------------------------------------------------------


def test_a_free_plan_is_402_plan_required(key_client, org, api_client):
    factories.make_user(org=org, role="owner")
    generator = factories.make_generator(org=org, formats=["image"])
    signed, record_id = _signed(key_client(org), generator, photo_bytes("astronaut", "jpeg"))
    response = _embed(key_client(org), record_id, signed)
    assert response.status_code == 402 and response.json()["error"] == "plan_required"


def test_an_unverified_owner_is_403_email_not_verified(key_client, growth_org):
    factories.make_user(org=growth_org, role="owner", verified=False)
    generator = factories.make_generator(org=growth_org, formats=["image"])
    signed, record_id = _signed(key_client(growth_org), generator, photo_bytes("astronaut", "jpeg"))
    response = _embed(key_client(growth_org), record_id, signed)
    assert response.status_code == 403 and response.json()["error"] == "email_not_verified"


def test_another_organizations_record_is_403_forbidden(client, generator, key_client):
    signed, record_id = _signed(client, generator, photo_bytes("astronaut", "jpeg"))
    other = factories.make_org(plan="growth", name="Other")
    factories.make_user(org=other, role="owner")
    response = _embed(key_client(other), record_id, signed)
    assert response.status_code == 403 and response.json()["error"] == "forbidden"


def test_a_revoked_generator_is_403(client, generator):
    signed, record_id = _signed(client, generator, photo_bytes("astronaut", "jpeg"))
    generator_revoke(generator=generator)
    response = _embed(client, record_id, signed)
    assert response.status_code == 403 and response.json()["error"] == "forbidden"
    assert "revoked" in response.json()["message"]


def test_a_client_managed_record_is_400(client, growth):
    generator, seed = factories.make_client_generator(org=growth)
    content = photo_bytes("astronaut", "jpeg")
    created = client.post("/v1/records", factories.record_body(generator=generator, seed=seed, content=content),
                          format="json")
    assert created.status_code == 201, created.content
    response = _embed(client, created.json()["record_id"], content)
    assert response.status_code == 400 and response.json()["error"] == "generator_client_managed"


def test_content_that_is_not_the_records_asset_is_400(client, generator):
    _, record_id = _signed(client, generator, photo_bytes("astronaut", "jpeg"))
    other, _ = _signed(client, generator, photo_bytes("camera", "jpeg"))
    for content in (other, photo_bytes("astronaut", "jpeg")):
        response = _embed(client, record_id, content)
        assert response.status_code == 400 and response.json()["error"] == "validation_error"
        assert "not the signed asset" in response.json()["details"]["content"][0]


def test_a_format_without_c2pa_carriage_is_400(client, growth, generator):
    text_generator = factories.make_generator(org=growth, formats=["text"])
    signed, record_id = _signed(client, text_generator, b"A plain text generated by a model.\n")
    response = _embed(client, record_id, signed)
    assert response.status_code == 400 and response.json()["error"] == "format_not_supported"
    garbage = _embed(client, record_id, b"\xff\xd8\xff\xe0 not really a jpeg")
    assert garbage.status_code == 400


def test_an_asset_over_50_mb_is_413(client, generator):
    _, record_id = _signed(client, generator, photo_bytes("astronaut", "jpeg"))
    big = io.BytesIO(b"\xff\xd8" + b"\x00" * (50 * 1024 * 1024 + 1))
    response = client.post(_url(record_id), {"content": big}, format="multipart")
    assert response.status_code == 413 and response.json()["error"] == "payload_too_large"


def test_unknown_record_missing_content_and_no_key(client, generator, api_client):
    missing = _embed(client, "00000000-0000-4000-8000-000000000000", photo_bytes())
    assert missing.status_code == 404 and missing.json()["error"] == "not_found"
    signed, record_id = _signed(client, generator, photo_bytes("astronaut", "jpeg"))
    empty = client.post(_url(record_id), {}, format="multipart")
    assert empty.status_code == 400 and empty.json()["error"] == "validation_error"
    anonymous = _embed(api_client, record_id, signed)
    assert anonymous.status_code == 401
    assert Record.objects.count() == 1


# --- an upload that already carries a C2PA manifest (made by c2pa-python's own signer) ----------------------


def _upstream_signed(fmt: str) -> bytes:
    from tests.c2pa_upstream import c2pa_sign

    return c2pa_sign(photo_bytes("astronaut", fmt), f"image/{fmt}")


@pytest.mark.parametrize("fmt", ["jpeg", "png"])
def test_an_upstream_manifest_is_kept_with_the_record_and_becomes_our_parent_ingredient(client, generator,
                                                                                       api_client, fmt):
    upload = _upstream_signed(fmt)
    upstream_label = read_manifest(upload).label
    signed, record_id = _signed(client, generator, upload)
    # The signed file carries no broken upstream manifest: the store went to the record.
    assert read_manifest(signed) is None
    kept = Record.objects.get(pk=record_id).upstream_manifest
    assert kept.label == upstream_label and kept.format == f"image/{fmt}"
    results = kept.validation_results["activeManifest"]
    assert {"claimSignature.validated", "assertion.dataHash.match"} <= {s["code"] for s in results["success"]}
    assert [f["code"] for f in results["failure"]] == ["signingCredential.untrusted"]
    assert verify(api_client, signed)["authentic"]

    embedded = _embed(client, record_id, signed).content
    report = _c2pa_report(embedded, f"image/{fmt}")
    ours = report["active_manifest"]
    assert set(report["manifests"]) == {ours, upstream_label}
    assert _codes(report, "failure") == EXPECTED_FAILURES
    assert _codes(report, "success") == ["assertion.hashedURI.match"] * 5 + ["assertion.dataHash.match"]
    ingredient, = report["manifests"][ours]["ingredients"]
    assert ingredient["relationship"] == "parentOf" and ingredient["active_manifest"] == upstream_label
    assert ingredient["validation_results"]["activeManifest"] == kept.validation_results["activeManifest"]
    delta, = report["validation_results"]["ingredientDeltas"]
    assert delta["validationDeltas"]["failure"] == []

    result = verify(api_client, embedded)
    assert (result["authentic"], result["token_source"]) == (True, "c2pa")
    again = _embed(client, record_id, embedded).content
    assert read_manifest(again).manifest_count == 2  # replaced, never stacked


def test_a_malformed_upstream_manifest_is_refused_at_signing(client, generator):
    upload = bytearray(_upstream_signed("png"))
    store_at = upload.index(b"caBX") + 4
    upload[store_at + 40 : store_at + 60] = b"\xff" * 20  # inside the JUMBF boxes (the PNG CRC is not checked)
    response = sign(client, generator, bytes(upload), model=MODEL)
    assert response.status_code == 400 and response.json()["error"] == "validation_error"
    assert "C2PA manifest" in response.json()["details"]["content"][0]
    assert not Record.objects.exists()
