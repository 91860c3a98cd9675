"""Upstream C2PA manifests: validated like c2pa-python validates them, then carried as our parentOf ingredient.

The upstream files are signed at test time by c2pa-python's own Builder with an ES256 CA + end-entity
chain made with cryptography (docs/c2pa-notes section 6 lists what c2pa-rs needs of that chain).
"""

from __future__ import annotations

import contextlib
import datetime
import functools
import json

import cbor2
import numpy as np
import pytest
from conftest import decoded, encode, photo
from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, padding, rsa
from cryptography.hazmat.primitives.asymmetric.mldsa import MLDSA65PrivateKey
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

from media_codecs import CodecError, CorruptMedia, MediaTooLarge, jumbf
from media_codecs.c2pa import (
    MAX_UPSTREAM_STORE_BYTES,
    ManifestFacts,
    carriers,
    embed,
    embed_jpeg,
    read_manifest,
    self_signed_certificate,
    signatures,
    strip_manifest,
    upstream_from_store,
    validate_upstream,
    verify_manifest,
)
from media_codecs.c2pa.manifest import CBOR_UUID, CLAIM_UUID, MANIFEST_UUID, SIGNATURE_UUID, STORE_UUID

c2pa = pytest.importorskip("c2pa")

from tests.c2pa_upstream import TRAINED, hostile_stores  # noqa: E402 (c2pa first: it may be absent)
from tests.c2pa_upstream import c2pa_report as _c2pa_read  # noqa: E402
from tests.c2pa_upstream import c2pa_sign as _c2pa_sign  # noqa: E402
from tests.c2pa_upstream import certificate_name as _name  # noqa: E402

EXPECTED_FAILURES = ["algorithm.unsupported", "claimSignature.mismatch"]
MOMENT = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
OUR_LABEL = "urn:c2pa:0f0e0d0c-0b0a-4908-8706-050403020100"
FORMATS = {"jpeg": ("JPEG", "image/jpeg"), "png": ("PNG", "image/png")}
EMPTY_RESULTS = {"activeManifest": {"success": [], "informational": [], "failure": []}}


@functools.cache
def _upstream_file(fmt: str, *, thumbnail: bool = False) -> bytes:
    image_format, mime = FORMATS[fmt]
    return _c2pa_sign(encode(photo("astronaut"), image_format), mime, thumbnail=thumbnail)


def _status_set(results: dict) -> set[tuple[str, str, str]]:
    return {(kind, status["code"], status["url"]) for kind, statuses in results["activeManifest"].items()
            if kind in ("success", "informational", "failure") for status in statuses}


def _codes(results: dict, kind: str) -> list[str]:
    return [status["code"] for status in results["activeManifest"][kind]]


@functools.cache
def _key() -> MLDSA65PrivateKey:
    return MLDSA65PrivateKey.generate()


def _facts(**changes: object) -> ManifestFacts:
    certificate = self_signed_certificate(_key(), common_name="gen_42", organization="Test Org", not_before=MOMENT,
                                          not_after=MOMENT + datetime.timedelta(days=3650))
    values = {"record_id": "rec_0123", "model": "image-model-7", "generator_id": "gen_42", "kid": "0011223344556677",
              "token": "svc_token", "certificate_chain": (certificate,), "watermark_id": 0x0123456789ABCDEF,
              "created_at": "2026-01-01T00:00:00Z", "manifest_label": OUR_LABEL}
    return ManifestFacts(**{**values, **changes})


def _verify_ours(message: bytes, signature: bytes) -> bool:
    try:
        _key().public_key().verify(signature, message)
    except Exception:
        return False
    return True


def _our_sign(upstream: bytes, fmt: str) -> bytes:
    """What POST /v1/sign does to the pixels: the store is stripped and the image re-encoded with changes."""
    image_format, _ = FORMATS[fmt]
    pixels = np.asarray(decoded(strip_manifest(upstream))).copy()
    pixels[:16, :16] = 255 - pixels[:16, :16]
    return encode(pixels, image_format, quality=90) if fmt == "jpeg" else encode(pixels, image_format)


def _parent_as_stored(fmt: str, **options: bool) -> tuple[bytes, object]:
    """(upstream file, the parent rebuilt from what the service persists: store, format, JSON results)."""
    upstream = _upstream_file(fmt, **options)
    found = validate_upstream(upstream, at=MOMENT + datetime.timedelta(days=30))
    persisted = json.loads(json.dumps({"store": found.store.hex(), "format": found.format,
                                       "results": found.validation_results}))
    parent = upstream_from_store(bytes.fromhex(persisted["store"]), format=persisted["format"],
                                 validation_results=persisted["results"])
    return upstream, parent


# -- validate_upstream --------------------------------------------------------------------------------


@pytest.mark.parametrize(("fmt", "thumbnail"), [("jpeg", False), ("jpeg", True), ("png", False)])
def test_validation_of_an_upstream_file_matches_c2pa_python_code_for_code(fmt: str, thumbnail: bool) -> None:
    upstream = _upstream_file(fmt, thumbnail=thumbnail)
    found = validate_upstream(upstream)
    report = _c2pa_read(upstream, FORMATS[fmt][1])
    assert _status_set(found.validation_results) == _status_set(report["validation_results"])
    assert _codes(found.validation_results, "failure") == ["signingCredential.untrusted"]
    assert {"claimSignature.validated", "claimSignature.insideValidity", "assertion.dataHash.match"} <= set(
        _codes(found.validation_results, "success"))
    assert found.is_valid and report["validation_state"] == "Valid"
    assert found.label == report["active_manifest"] and found.manifest_count == 1
    manifest = report["manifests"][found.label]
    assert found.title == manifest["title"] and found.instance_id == manifest["instance_id"]
    assert found.format == FORMATS[fmt][1]
    assert found.store == carriers.carrier_for(upstream).find(upstream).store
    assert all(set(status) == {"code", "url", "explanation"}
               for statuses in found.validation_results["activeManifest"].values() for status in statuses)


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_flipped_pixel_byte_is_a_data_hash_mismatch(fmt: str) -> None:
    upstream = bytearray(_upstream_file(fmt))
    found = carriers.carrier_for(bytes(upstream)).find(bytes(upstream))
    upstream[max(len(upstream) - 100, found.start + found.length + 200)] ^= 0x01
    result = validate_upstream(bytes(upstream))
    assert _codes(result.validation_results, "failure") == ["signingCredential.untrusted",
                                                            "assertion.dataHash.mismatch"]
    assert "claimSignature.validated" in _codes(result.validation_results, "success") and not result.is_valid
    assert "assertion.dataHash.mismatch" in [s["code"] for s in _c2pa_read(bytes(upstream), FORMATS[fmt][1])[
        "validation_results"]["activeManifest"]["failure"]]


def test_an_altered_assertion_is_a_hashed_uri_mismatch_and_the_signature_still_holds() -> None:
    upstream = _upstream_file("jpeg")
    tampered = upstream.replace(b"trainedAlgorithmicMedia", b"trainedAlgorithmicMediX", 1)
    result = validate_upstream(tampered)
    actions_url = f"self#jumbf=/c2pa/{result.label}/c2pa.assertions/c2pa.actions.v2"
    failures = result.validation_results["activeManifest"]["failure"]
    assert [(s["code"], s["url"]) for s in failures if s["code"] != "signingCredential.untrusted"] == [
        ("assertion.hashedURI.mismatch", actions_url)]
    assert "claimSignature.validated" in _codes(result.validation_results, "success") and not result.is_valid
    assert _status_set(result.validation_results) == _status_set(_c2pa_read(tampered, "image/jpeg")[
        "validation_results"])


def test_a_changed_claim_fails_the_signature() -> None:
    upstream, carrier = _upstream_file("png"), carriers.PngCarrier()
    instance_id = validate_upstream(upstream).instance_id.encode()
    found = carrier.find(upstream)
    store = found.store.replace(instance_id, instance_id[:-1] + (b"0" if instance_id[-1:] != b"0" else b"1"))
    tampered = carriers.splice(carrier.strip(upstream), found.start, carrier.wrapped(store))  # a fresh chunk CRC
    result = validate_upstream(tampered)
    assert "claimSignature.mismatch" in _codes(result.validation_results, "failure")
    assert "claimSignature.validated" not in _codes(result.validation_results, "success") and not result.is_valid


def test_a_certificate_outside_its_validity_is_expired() -> None:
    result = validate_upstream(_upstream_file("jpeg"), at=MOMENT + datetime.timedelta(days=5000))
    assert _codes(result.validation_results, "failure") == ["signingCredential.expired", "signingCredential.untrusted"]
    assert "claimSignature.insideValidity" not in _codes(result.validation_results, "success") and not result.is_valid


def test_our_own_ml_dsa_manifest_validates_as_an_upstream() -> None:
    ours = embed(encode(photo("astronaut"), "JPEG"), _facts(), _key().sign)
    result = validate_upstream(ours, at=MOMENT)
    assert _codes(result.validation_results, "failure") == ["signingCredential.untrusted"]
    assert result.is_valid and result.label == OUR_LABEL and result.manifest_count == 1


def test_files_without_a_store_have_no_upstream() -> None:
    assert validate_upstream(encode(photo("astronaut"), "PNG")) is None


# -- signatures ---------------------------------------------------------------------------------------


def _certificate_for(private_key: object) -> x509.Certificate:
    algorithm = None if isinstance(private_key, ed25519.Ed25519PrivateKey | MLDSA65PrivateKey) else hashes.SHA256()
    name = _name("signer")
    return (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(private_key.public_key())
            .serial_number(7).not_valid_before(MOMENT).not_valid_after(MOMENT + datetime.timedelta(days=1))
            .sign(private_key, algorithm))


def _ecdsa_raw(key: ec.EllipticCurvePrivateKey, digest: hashes.HashAlgorithm, message: bytes) -> bytes:
    r, s = decode_dss_signature(key.sign(message, ec.ECDSA(digest)))
    size = (key.curve.key_size + 7) // 8
    return r.to_bytes(size, "big") + s.to_bytes(size, "big")


@functools.cache
def _rsa_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def _signers() -> list[tuple[int, object, object]]:
    """(COSE alg, private key, sign(message) -> COSE signature bytes)."""
    cases = []
    for alg, curve, digest in ((-7, ec.SECP256R1, hashes.SHA256), (-35, ec.SECP384R1, hashes.SHA384),
                               (-36, ec.SECP521R1, hashes.SHA512)):
        key = ec.generate_private_key(curve())
        cases.append((alg, key, functools.partial(_ecdsa_raw, key, digest())))
    for alg, digest in ((-37, hashes.SHA256), (-38, hashes.SHA384), (-39, hashes.SHA512)):
        pss = padding.PSS(padding.MGF1(digest()), digest.digest_size)
        cases.append((alg, _rsa_key(), lambda m, d=digest, p=pss: _rsa_key().sign(m, p, d())))
    edwards = ed25519.Ed25519PrivateKey.generate()
    cases += [(-8, edwards, edwards.sign), (-49, _key(), _key().sign)]
    return cases


@pytest.mark.parametrize(("alg", "private_key", "sign"), _signers(), ids=lambda v: str(v) if isinstance(v, int) else "")
def test_every_c2pa_algorithm_verifies_and_rejects_a_changed_message(alg: int, private_key: object,
                                                                     sign: object) -> None:
    certificate = _certificate_for(private_key)
    signature = sign(b"claim bytes")
    assert signatures.verify(alg, certificate, b"claim bytes", signature)
    assert not signatures.verify(alg, certificate, b"claim bytez", signature)
    assert not signatures.verify(alg, certificate, b"claim bytes", signature[:-1])


def test_unknown_or_mismatched_algorithms_are_unsupported() -> None:
    certificate = _certificate_for(ec.generate_private_key(ec.SECP256R1()))
    for alg in (None, -999, "ES256", True, [-7], -8, -37, -35):
        with pytest.raises(signatures.UnsupportedAlgorithm):
            signatures.verify(alg, certificate, b"m", b"s" * 64)
    with pytest.raises(signatures.BadCertificate):
        signatures.load_certificate(b"not a certificate")


# -- hostile stores -----------------------------------------------------------------------------------


def _store_of(manifest_children: list[jumbf.SuperBox | jumbf.ContentBox]) -> bytes:
    manifest = jumbf.SuperBox("urn:c2pa:00000000-0000-4000-8000-000000000000", MANIFEST_UUID, manifest_children)
    return jumbf.write(jumbf.SuperBox("c2pa", STORE_UUID, [manifest]))


def _cbor_box(label: str, uuid: bytes, payload: bytes) -> jumbf.SuperBox:
    return jumbf.SuperBox(label, uuid, [jumbf.ContentBox(b"cbor", payload)])


def test_hostile_upstream_stores_raise_codec_errors_only() -> None:
    base = encode(photo("astronaut"), "JPEG")
    good = carriers.carrier_for(_upstream_file("jpeg")).find(_upstream_file("jpeg")).store
    for store in hostile_stores(good, seed=11, mutations=150):
        with contextlib.suppress(CodecError):
            validate_upstream(embed_jpeg(base, store))
        with contextlib.suppress(CodecError):
            upstream_from_store(store, format="image/jpeg", validation_results=EMPTY_RESULTS)


@pytest.mark.parametrize("store", [
    _store_of([]),  # no claim
    _store_of([_cbor_box("c2pa.claim.v2", CLAIM_UUID, cbor2.dumps({"alg": "sha256"}))]),  # no signature
    _store_of([_cbor_box("c2pa.claim.v2", CLAIM_UUID, b"\xff\xff"),  # claim is not CBOR
               _cbor_box("c2pa.signature", SIGNATURE_UUID, cbor2.dumps(cbor2.CBORTag(18, [b"", {}, None, b""])))]),
    _store_of([_cbor_box("c2pa.claim.v2", CLAIM_UUID, cbor2.dumps({})),  # signature is not a COSE_Sign1
               _cbor_box("c2pa.signature", SIGNATURE_UUID, cbor2.dumps([1, 2]))]),
    _store_of([_cbor_box("c2pa.claim.v2", CLAIM_UUID, cbor2.dumps([])),  # claim is not a map
               _cbor_box("c2pa.signature", SIGNATURE_UUID, cbor2.dumps(cbor2.CBORTag(18, [b"", {}, None, b""])))]),
    jumbf.write(jumbf.SuperBox("c2pa", STORE_UUID, [])),  # no manifest
])
def test_malformed_stores_are_corrupt(store: bytes) -> None:
    with pytest.raises(CorruptMedia):
        validate_upstream(embed_jpeg(encode(photo("astronaut"), "JPEG"), store))
    with pytest.raises(CorruptMedia):
        upstream_from_store(store, format="image/jpeg", validation_results=EMPTY_RESULTS)


def test_jumbf_that_is_not_a_manifest_store_is_no_upstream_but_corrupt_as_a_kept_store() -> None:
    store = jumbf.write(jumbf.SuperBox("c2pa", CBOR_UUID, []))
    assert validate_upstream(embed_jpeg(encode(photo("astronaut"), "JPEG"), store)) is None  # no `c2pa` mark
    with pytest.raises(CorruptMedia):
        upstream_from_store(store, format="image/jpeg", validation_results=EMPTY_RESULTS)


def test_a_store_over_the_limit_is_too_large() -> None:
    filler = jumbf.ContentBox(b"free", bytes(MAX_UPSTREAM_STORE_BYTES))
    store = jumbf.write(jumbf.SuperBox("c2pa", STORE_UUID, [filler]))
    with pytest.raises(MediaTooLarge):
        validate_upstream(embed_jpeg(encode(photo("astronaut"), "JPEG"), store))
    with pytest.raises(MediaTooLarge):
        upstream_from_store(store, format="image/jpeg", validation_results={})


def test_a_validation_result_that_is_not_c2pa_shaped_is_corrupt() -> None:
    store = carriers.carrier_for(_upstream_file("png")).find(_upstream_file("png")).store
    for results in ({}, [], {"activeManifest": {"success": []}}, {"activeManifest": []}):
        with pytest.raises(CorruptMedia):
            upstream_from_store(store, format="image/png", validation_results=results)


# -- embedding with a parent --------------------------------------------------------------------------


def _reader_report(fmt: str) -> tuple[object, bytes, dict]:
    upstream, parent = _parent_as_stored(fmt)
    signed = embed(_our_sign(upstream, fmt), _facts(), _key().sign, parent=parent)
    return parent, signed, _c2pa_read(signed, FORMATS[fmt][1])


@pytest.mark.parametrize("fmt", FORMATS)
def test_c2pa_python_reads_our_manifest_with_the_upstream_as_parent(fmt: str) -> None:
    parent, _, report = _reader_report(fmt)
    ours = OUR_LABEL
    assert report["active_manifest"] == ours and set(report["manifests"]) == {ours, parent.label}
    results = report["validation_results"]
    assert _codes(results, "failure") == EXPECTED_FAILURES
    assert _codes(results, "success") == ["assertion.hashedURI.match"] * 5 + ["assertion.dataHash.match"]
    assert all(s["url"].startswith(f"self#jumbf=/c2pa/{ours}/") for s in results["activeManifest"]["success"])
    ingredient, = report["manifests"][ours]["ingredients"]
    assert ingredient["relationship"] == "parentOf" and ingredient["active_manifest"] == parent.label
    assert ingredient["title"] == parent.title and ingredient["format"] == FORMATS[fmt][1]
    assert ingredient["instance_id"] == parent.instance_id
    assert ingredient["validation_results"]["activeManifest"] == parent.validation_results["activeManifest"]
    delta, = results["ingredientDeltas"]
    assert delta["ingredientAssertionURI"] == f"self#jumbf=/c2pa/{ours}/c2pa.assertions/c2pa.ingredient.v3"
    assert delta["validationDeltas"]["failure"] == [] and delta["validationDeltas"]["informational"] == []
    assert [s["code"] for s in delta["validationDeltas"]["success"]] == ["ingredient.manifest.validated"]
    assert report["manifests"][parent.label]["claim_generator_info"][0]["name"] == "Upstream Generator"


def test_the_first_action_opens_the_parent_and_keeps_the_digital_source_type() -> None:
    _, _, report = _reader_report("jpeg")
    manifest = report["manifests"][report["active_manifest"]]
    actions = next(a for a in manifest["assertions"] if a["label"] == "c2pa.actions.v2")["data"]["actions"]
    opened, = actions
    assert opened["action"] == "c2pa.opened" and opened["digitalSourceType"] == TRAINED
    assert opened["parameters"]["ingredients"][0]["url"] == "self#jumbf=c2pa.assertions/c2pa.ingredient.v3"


@pytest.mark.parametrize("fmt", FORMATS)
def test_our_reader_verifies_our_manifest_and_exposes_the_parent(fmt: str) -> None:
    parent, signed, _ = _reader_report(fmt)
    result = verify_manifest(signed, _verify_ours)
    assert result.is_valid and len(result.assertion_hashes) == 5
    manifest = read_manifest(signed)
    assert manifest.manifest_count == 2 and manifest.label == OUR_LABEL
    assert manifest.parent["relationship"] == "parentOf"
    assert manifest.parent["activeManifest"]["url"] == f"self#jumbf=/c2pa/{parent.label}"
    assert manifest.parent["activeManifest"]["hash"] == parent.active_manifest_hash
    assert manifest.parent["validationResults"] == parent.validation_results
    assert carriers.carrier_for(signed).find(signed).store.find(parent.store[8:]) > 0  # upstream copied verbatim


def test_embedding_twice_replaces_our_manifest_and_never_stacks() -> None:
    upstream, parent = _parent_as_stored("jpeg")
    once = embed(_our_sign(upstream, "jpeg"), _facts(), _key().sign, parent=parent)
    second = _facts(record_id="rec_9999", manifest_label="urn:c2pa:99999999-9999-4999-8999-999999999999")
    twice = embed(once, second, _key().sign, parent=parent)
    assert read_manifest(twice).manifest_count == 2 and read_manifest(twice).label == second.manifest_label
    report = _c2pa_read(twice, "image/jpeg")
    assert set(report["manifests"]) == {second.manifest_label, parent.label}
    assert _codes(report["validation_results"], "failure") == EXPECTED_FAILURES
    assert strip_manifest(twice) == strip_manifest(once)
    without_parent = embed(twice, second, _key().sign)
    assert read_manifest(without_parent).manifest_count == 1 and read_manifest(without_parent).parent is None


def test_an_upstream_with_its_own_ingredient_keeps_the_whole_chain() -> None:
    first = _upstream_file("jpeg")
    edited = _c2pa_sign(first, "image/jpeg", parent=True)
    found = validate_upstream(edited)
    assert found.manifest_count == 2 and found.is_valid
    signed = embed(_our_sign(edited, "jpeg"), _facts(), _key().sign, parent=found)
    report = _c2pa_read(signed, "image/jpeg")
    assert len(report["manifests"]) == 3 and read_manifest(signed).manifest_count == 3
    assert _codes(report["validation_results"], "failure") == EXPECTED_FAILURES
    for delta in report["validation_results"].get("ingredientDeltas", []):
        assert delta["validationDeltas"]["failure"] == []


def test_re_signing_our_own_output_keeps_it_as_parent_and_only_c2pa_cannot_verify_ml_dsa() -> None:
    earlier = embed(encode(photo("astronaut"), "JPEG"), _facts(manifest_label="urn:c2pa:11111111-1111-4111-8111-"
                                                                                  "111111111111"), _key().sign)
    signed = embed(earlier, _facts(), _key().sign, parent=validate_upstream(earlier, at=MOMENT))
    delta, = _c2pa_read(signed, "image/jpeg")["validation_results"]["ingredientDeltas"]
    assert [s["code"] for s in delta["validationDeltas"]["success"]] == ["ingredient.manifest.validated"]
    assert [s["code"] for s in delta["validationDeltas"]["failure"]] == EXPECTED_FAILURES


def test_a_parent_holding_our_label_is_refused() -> None:
    _, parent = _parent_as_stored("png")
    with pytest.raises(ValueError, match="label"):
        embed(encode(photo("astronaut"), "PNG"), _facts(manifest_label=parent.label), _key().sign, parent=parent)
