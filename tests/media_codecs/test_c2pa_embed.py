"""C2PA manifests in JPEG and PNG: c2pa-python reads what we embed, and our own reader verifies it."""

from __future__ import annotations

import contextlib
import datetime
import functools

import numpy as np
import pytest
from conftest import TOKEN, XMP_WITH_CREATOR, decoded, encode, exif_with_orientation, photo, srgb_profile
from cryptography.hazmat.primitives.asymmetric.mldsa import MLDSA65PrivateKey
from dilithium_py.ml_dsa import ML_DSA_65
from PIL import PngImagePlugin

from media_codecs import CodecError, UnsupportedFormat, get_codec
from media_codecs.c2pa import (
    ManifestFacts,
    carriers,
    embed,
    embed_jpeg,
    embed_png,
    read_manifest,
    self_signed_certificate,
    strip_manifest,
    verify_manifest,
)
from media_codecs.c2pa.manifest import PROVENANCE_LABEL, SOFT_BINDING_LABEL, build_store
from media_codecs.image import jpeg

c2pa = pytest.importorskip("c2pa")

from tests.c2pa_upstream import active_codes as _codes  # noqa: E402 (c2pa first: it may be absent)
from tests.c2pa_upstream import c2pa_report as _c2pa_read  # noqa: E402
from tests.c2pa_upstream import hostile_stores  # noqa: E402

MARK_ID = 0x0123456789ABCDEF
EXPECTED_FAILURES = ["algorithm.unsupported", "claimSignature.mismatch"]


@functools.cache
def _key() -> MLDSA65PrivateKey:
    return MLDSA65PrivateKey.generate()


def _facts(**changes: object) -> ManifestFacts:
    key = _key()
    moment = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
    certificate = _certificate(moment)
    values = {"record_id": "rec_0123", "model": "image-model-7", "generator_id": "gen_42", "kid": "0011223344556677",
              "token": TOKEN, "certificate_chain": (certificate,), "public_key": key.public_key().public_bytes_raw(),
              "public_key_url": "https://example.test/v1/generators/gen_42/public-key", "watermark_id": MARK_ID,
              "created_at": "2026-01-01T00:00:00Z"}
    return ManifestFacts(**{**values, **changes})


@functools.cache
def _certificate(moment: datetime.datetime) -> bytes:
    return self_signed_certificate(_key(), common_name="gen_42", organization="Test Org", not_before=moment,
                                   not_after=moment + datetime.timedelta(days=3650))


def _sign(message: bytes) -> bytes:
    return _key().sign(message)


def _verify_pyca(message: bytes, signature: bytes) -> bool:
    try:
        _key().public_key().verify(signature, message)
    except Exception:
        return False
    return True


def _verify_dilithium_py(message: bytes, signature: bytes) -> bool:
    return ML_DSA_65.verify(_key().public_key().public_bytes_raw(), message, signature)


def _png_with_chunks() -> bytes:
    info = PngImagePlugin.PngInfo()
    info.add_text("Comment", "made for a test")
    info.add_itxt("XML:com.adobe.xmp", XMP_WITH_CREATOR.decode())
    return encode(photo("chelsea"), "PNG", pnginfo=info, exif=exif_with_orientation(), icc_profile=srgb_profile(),
                  dpi=(300, 300))


SAMPLES = {
    "jpeg-baseline": lambda: encode(photo("astronaut"), "JPEG", quality=90),
    "jpeg-progressive": lambda: encode(photo("coffee"), "JPEG", quality=85, progressive=True),
    "jpeg-exif-icc": lambda: encode(photo("chelsea"), "JPEG", quality=90, exif=exif_with_orientation(),
                                    icc_profile=srgb_profile()),
    "jpeg-greyscale": lambda: encode(photo("camera"), "JPEG", quality=90),
    "png-plain": lambda: encode(photo("astronaut"), "PNG"),
    "png-extra-chunks": _png_with_chunks,
}


def _signed_sample(name: str) -> tuple[bytes, bytes, str]:
    """(original with our XMP token, embedded, mime type)."""
    fmt = name.split("-")[0]
    original = get_codec(fmt).embed_token(SAMPLES[name](), TOKEN)
    return original, embed(original, _facts(), _sign), f"image/{fmt}"


@pytest.mark.parametrize("name", SAMPLES)
def test_c2pa_python_parses_our_manifest_and_only_rejects_the_algorithm(name: str) -> None:
    _, signed, mime = _signed_sample(name)
    report = _c2pa_read(signed, mime)
    assert _codes(report, "failure") == EXPECTED_FAILURES
    assert _codes(report, "success") == ["assertion.hashedURI.match"] * 4 + ["assertion.dataHash.match"]
    assert report["validation_state"] == "Invalid"
    manifest = report["manifests"][report["active_manifest"]]
    assert manifest["claim_generator_info"][0]["name"] == "Provenance Service"
    assert {a["label"] for a in manifest["assertions"]} >= {"c2pa.actions.v2", PROVENANCE_LABEL, SOFT_BINDING_LABEL}
    actions = next(a for a in manifest["assertions"] if a["label"] == "c2pa.actions.v2")["data"]["actions"]
    assert actions[0]["action"] == "c2pa.created"
    assert actions[0]["digitalSourceType"].endswith("/trainedAlgorithmicMedia")


@pytest.mark.parametrize("name", SAMPLES)
def test_our_reader_verifies_signature_data_hash_and_assertions(name: str) -> None:
    _, signed, _ = _signed_sample(name)
    for verify in (_verify_pyca, _verify_dilithium_py):
        result = verify_manifest(signed, verify)
        assert result.signature_valid and result.data_hash_valid and result.is_valid
        assert len(result.assertion_hashes) == 4
    manifest = read_manifest(signed)
    assert manifest.alg == -49 and manifest.kid == "0011223344556677"
    assert manifest.certificate_chain == [_facts().certificate_chain[0]]
    assert manifest.public_key == _key().public_key().public_bytes_raw()
    assert manifest.provenance == {"record_id": "rec_0123", "model": "image-model-7", "generator_id": "gen_42",
                                   "signature_algorithm": "ml-dsa-65", "kid": "0011223344556677", "token": TOKEN}
    assert manifest.soft_binding["alg"] == "service.image-watermark.1"
    assert manifest.claim["claim_generator_info"]["name"] == "Provenance Service"


@pytest.mark.parametrize("name", SAMPLES)
def test_pixels_token_and_other_bytes_are_untouched(name: str) -> None:
    original, signed, _ = _signed_sample(name)
    fmt = name.split("-")[0]
    assert np.array_equal(np.asarray(decoded(signed)), np.asarray(decoded(original)))
    assert get_codec(fmt).extract_token(signed) == TOKEN
    assert strip_manifest(signed) == original
    found = carriers.carrier_for(signed).find(signed)
    assert signed[: found.start] + signed[found.start + found.length :] == original


def test_a_wrong_key_or_a_changed_claim_fails_the_signature() -> None:
    _, signed, _ = _signed_sample("jpeg-baseline")
    other = MLDSA65PrivateKey.generate().public_key().public_bytes_raw()
    assert not verify_manifest(signed, lambda m, s: ML_DSA_65.verify(other, m, s)).signature_valid
    manifest = read_manifest(signed)
    tampered = signed.replace(b"image-model-7", b"image-model-8")
    result = verify_manifest(tampered, _verify_pyca)
    assert result.signature_valid  # the claim is intact; the assertion it names is not
    assert not all(result.assertion_hashes.values()) and not result.is_valid
    assert manifest.label == read_manifest(tampered).label


@pytest.mark.parametrize("name", ["jpeg-baseline", "jpeg-progressive", "png-plain"])
def test_data_hash_fails_after_one_image_byte_flips(name: str) -> None:
    _, signed, mime = _signed_sample(name)
    found = carriers.carrier_for(signed).find(signed)
    position = len(signed) - 100 if name.startswith("jpeg") else found.start + found.length + 200
    flipped = bytearray(signed)
    flipped[position] ^= 0x01
    result = verify_manifest(bytes(flipped), _verify_pyca)
    assert result.signature_valid and not result.data_hash_valid and not result.is_valid
    assert "assertion.dataHash.mismatch" in _codes(_c2pa_read(bytes(flipped), mime), "failure")


@pytest.mark.parametrize("name", ["jpeg-exif-icc", "png-extra-chunks"])
def test_embedding_twice_replaces_the_manifest(name: str) -> None:
    original, signed, mime = _signed_sample(name)
    second = _facts(record_id="rec_9999")
    twice = embed(signed, second, _sign)
    manifest = read_manifest(twice)
    assert manifest.manifest_count == 1 and manifest.label == second.manifest_label
    assert manifest.provenance["record_id"] == "rec_9999"
    assert strip_manifest(twice) == original
    assert verify_manifest(twice, _verify_pyca).is_valid
    report = _c2pa_read(twice, mime)
    assert list(report["manifests"]) == [second.manifest_label]
    assert _codes(report, "failure") == EXPECTED_FAILURES


def test_a_store_larger_than_one_segment_is_split_and_read() -> None:
    original = encode(photo("astronaut"), "JPEG", quality=90)
    facts = _facts(token="t" * 150_000)
    signed = embed(original, facts, _sign)
    segments = [segment for segment in jpeg.parse_header(signed)[0] if segment.marker == 0xEB]
    assert len(segments) == 3
    assert verify_manifest(signed, _verify_pyca).is_valid
    report = _c2pa_read(signed, "image/jpeg")
    assert _codes(report, "failure") == EXPECTED_FAILURES
    assert "assertion.dataHash.match" in _codes(report, "success")
    assert strip_manifest(signed) == original


def test_without_a_watermark_there_is_no_soft_binding() -> None:
    signed = embed(encode(photo("astronaut"), "PNG"), _facts(watermark_id=None, public_key_url=None), _sign)
    manifest = read_manifest(signed)
    assert SOFT_BINDING_LABEL not in manifest.assertions and manifest.public_key_url is None
    assert _codes(_c2pa_read(signed, "image/png"), "success") == ["assertion.hashedURI.match"] * 3 + [
        "assertion.dataHash.match"]


def test_ready_stores_splice_into_jpeg_and_png_replacing_any_store() -> None:
    store = build_store(_facts(), _sign, data_hash=b"\x00" * 32, exclusion=(0, 0))
    for data, splice in ((encode(photo("astronaut"), "JPEG"), embed_jpeg), (encode(photo("astronaut"), "PNG"),
                                                                            embed_png)):
        once = splice(data, store)
        assert splice(once, store) == once
        assert carriers.carrier_for(once).find(once).store == store
        assert strip_manifest(once) == data


def test_files_without_a_manifest_read_as_none() -> None:
    data = encode(photo("astronaut"), "JPEG")
    assert read_manifest(data) is None and verify_manifest(data, _verify_pyca) is None
    assert strip_manifest(data) == data


def test_other_formats_are_refused() -> None:
    with pytest.raises(UnsupportedFormat):
        embed(b"plain text carries no manifest store\n", _facts(), _sign)
    with pytest.raises(UnsupportedFormat):
        read_manifest(b"GIF89a")


def test_hostile_stores_raise_codec_errors_only() -> None:
    base = encode(photo("astronaut"), "JPEG")
    good = carriers.carrier_for(signed := embed(base, _facts(), _sign)).find(signed).store
    for store in hostile_stores(good, seed=7, mutations=200):
        with contextlib.suppress(CodecError):
            verify_manifest(embed_jpeg(base, store), _verify_pyca)


def test_a_png_with_two_stores_is_corrupt() -> None:
    once = embed(encode(photo("astronaut"), "PNG"), _facts(), _sign)
    found = carriers.PngCarrier().find(once)
    chunk = once[found.start : found.start + found.length]
    twice = once[: found.start] + chunk + once[found.start :]
    with pytest.raises(CodecError):
        read_manifest(twice)
