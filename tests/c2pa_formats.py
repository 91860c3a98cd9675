"""What every C2PA carrier format is checked for (WebP, WAV, MP3, FLAC: tests/media_codecs/test_c2pa_webp.py and
test_c2pa_audio.py): our manifests embedded, read back by c2pa-python (trusted hybrid + time stamps, ML-DSA
alone) and by our reader; the content hash and the token surviving the store; upstream files signed by
c2pa-python's Builder; hostile stores. Media are made at test time by the calling module (`Sample`)."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable
from dataclasses import dataclass

from media_codecs import CodecError, get_codec, jumbf, open_media
from media_codecs.c2pa import (
    ManifestFacts,
    carriers,
    embed,
    read_manifest,
    strip_manifest,
    upstream_from_store,
    validate_upstream,
    verify_manifest,
)
from media_codecs.c2pa.manifest import STORE_UUID
from record_format.hashing import content_hash_of_media
from tests.c2pa_signers import codes, der, hybrid_signer, ml_dsa_signer, signing_ca, trusted_report, tsa_stamper
from tests.c2pa_upstream import c2pa_report, c2pa_sign, hostile_stores

TOKEN = "svc_0123456789abcdef.signature-part_1"
EXPECTED_FAILURES = ["algorithm.unsupported", "claimSignature.mismatch"]
BINDING_MATCH = "assertion.dataHash.match"


@dataclass(frozen=True)
class Sample:
    """One test input: its format (codec name), MIME type and a maker of its bytes (cached by the caller)."""

    format: str
    mime: str
    make: Callable[[], bytes]

    @property
    def codec(self):
        return get_codec(self.format)

    def signed(self) -> bytes:
        """The input with our token in its metadata, as signing leaves it before a manifest is embedded."""
        return self.codec.embed_token(self.make(), TOKEN)


def facts(**changes: object) -> ManifestFacts:
    values = {"record_id": "rec_0123", "model": "audio-model-2", "generator_id": "gen_42", "kid": "test-kid",
              "token": TOKEN, "certificate_chain": (der(signing_ca()["ml_dsa"]),), "watermark_id": None,
              "created_at": "2026-01-01T00:00:00Z"}
    return ManifestFacts(**{**values, **changes})


def verify_ml_dsa(message: bytes, signature: bytes) -> bool:
    try:
        signing_ca()["ml_dsa_key"].public_key().verify(signature, message)
    except Exception:
        return False
    return True


@functools.cache
def ml_dsa_embedded(data: bytes) -> bytes:
    return embed(data, facts(), ml_dsa_signer())


def splice_store(data: bytes, store: bytes) -> bytes:
    """`data` carrying `store` where its format puts one (no hashing: any bytes), replacing any store."""
    carrier = carriers.carrier_for(data)
    stripped = carrier.strip(data)
    return carrier.layout(stripped, len(store)).join(carrier.wrapped(store))


# -- the checks ----------------------------------------------------------------------------------------


def check_trusted_hybrid(data: bytes, mime: str, tsa) -> bytes:
    """Hybrid (ES256 + ML-DSA-65 countersignature) with RFC 3161 stamps: c2pa-python trusts it, nothing fails."""
    out = embed(data, facts(), hybrid_signer(tsa_stamper(tsa.url)))
    report = trusted_report(out, mime, [tsa.root])
    assert report["validation_state"] == "Trusted", report["validation_results"]
    assert codes(report, "failure") == []
    success = codes(report, "success")
    assert {BINDING_MATCH, "timeStamp.validated", "timeStamp.trusted", "claimSignature.validated"} <= set(success)
    return out


def check_ml_dsa_only(data: bytes, mime: str) -> None:
    out = ml_dsa_embedded(data)
    report = trusted_report(out, mime)
    assert codes(report, "failure") == EXPECTED_FAILURES
    assert codes(report, "success") == ["assertion.hashedURI.match"] * 3 + [BINDING_MATCH]
    manifest = report["manifests"][report["active_manifest"]]
    assert manifest["claim_generator_info"][0]["name"] == "Provenance Service"


def check_our_reader(data: bytes) -> None:
    out = ml_dsa_embedded(data)
    result = verify_manifest(out, verify_ml_dsa)
    assert result.signature_valid and result.data_hash_valid and result.is_valid
    assert len(result.assertion_hashes) == 3 and all(result.assertion_hashes.values())
    manifest = read_manifest(out)
    assert manifest.manifest_count == 1 and manifest.provenance["token"] == TOKEN and manifest.alg == -49
    assert strip_manifest(out) == data
    assert carriers.carrier_for(out).find(out).store in out
    assert read_manifest(data) is None and strip_manifest(data) == data


def check_content_hash_and_token(sample: Sample) -> bytes:
    """The content hash of the signed file is the same with the store in it; the token still reads."""
    signed = sample.signed()
    out = ml_dsa_embedded(signed)
    assert open_media(out).codec is sample.codec
    assert content_hash_of_media(open_media(out)) == content_hash_of_media(open_media(signed))
    assert sample.codec.strip_token(out) == sample.codec.strip_token(signed)
    assert sample.codec.extract_token(out) == TOKEN
    return out


def check_flipped_byte(data: bytes, mime: str, position: int) -> None:
    """One changed byte of the media payload at `position` of the embedded file: the binding fails for both
    readers, the signature still holds."""
    out = bytearray(ml_dsa_embedded(data))
    found = carriers.carrier_for(bytes(out)).find(bytes(out))
    assert not found.start <= position < found.start + found.length
    out[position] ^= 0x01
    result = verify_manifest(bytes(out), verify_ml_dsa)
    assert result.signature_valid and not result.data_hash_valid and not result.is_valid
    assert "assertion.dataHash.mismatch" in codes(trusted_report(bytes(out), mime), "failure")


def check_embedding_twice_replaces(data: bytes, mime: str) -> None:
    once = ml_dsa_embedded(data)
    second = facts(record_id="rec_9999")
    twice = embed(once, second, ml_dsa_signer())
    manifest = read_manifest(twice)
    assert manifest.manifest_count == 1 and manifest.label == second.manifest_label
    assert strip_manifest(twice) == data and verify_manifest(twice, verify_ml_dsa).is_valid
    report = trusted_report(twice, mime)
    assert list(report["manifests"]) == [second.manifest_label]
    assert codes(report, "failure") == EXPECTED_FAILURES


def _status_set(results: dict) -> set[tuple[str, str, str]]:
    return {(kind, status["code"], status["url"]) for kind, statuses in results["activeManifest"].items()
            if kind in ("success", "informational", "failure") for status in statuses}


@functools.cache
def upstream_file(data: bytes, mime: str) -> bytes:
    return c2pa_sign(data, mime)


def check_upstream(data: bytes, mime: str) -> None:
    """A file c2pa-python's Builder signed: found, validated code for code as c2pa-python reports it, then kept
    as our parentOf ingredient (from the file and from what the service stores), which c2pa-python reads."""
    upstream = upstream_file(data, mime)
    found = validate_upstream(upstream)
    report = c2pa_report(upstream, mime)
    assert _status_set(found.validation_results) == _status_set(report["validation_results"])
    assert [s["code"] for s in found.validation_results["activeManifest"]["failure"]] == [
        "signingCredential.untrusted"]
    assert found.is_valid and found.label == report["active_manifest"] and found.format == mime
    assert found.store == carriers.carrier_for(upstream).find(upstream).store
    stripped = strip_manifest(upstream)
    assert read_manifest(stripped) is None
    kept = upstream_from_store(found.store, format=found.format, validation_results=found.validation_results)
    for parent in (found, kept):
        out = embed(stripped, facts(), ml_dsa_signer(), parent=parent)
        assert verify_manifest(out, verify_ml_dsa).is_valid and read_manifest(out).manifest_count == 2
        ours = c2pa_report(out, mime)
        assert [s["code"] for s in ours["validation_results"]["activeManifest"]["failure"]] == EXPECTED_FAILURES
        assert BINDING_MATCH in [s["code"] for s in ours["validation_results"]["activeManifest"]["success"]]
        ingredient, = ours["manifests"][ours["active_manifest"]]["ingredients"]
        assert ingredient["relationship"] == "parentOf" and ingredient["active_manifest"] == found.label
        assert ingredient["validation_results"]["activeManifest"] == found.validation_results["activeManifest"]
        delta, = ours["validation_results"]["ingredientDeltas"]
        assert [s["code"] for s in delta["validationDeltas"]["success"]] == ["ingredient.manifest.validated"]


def jumbf_bombs() -> list[bytes]:
    """Stores nesting past jumbf.MAX_DEPTH and holding more than jumbf.MAX_BOXES boxes."""
    deep = jumbf.SuperBox("x", STORE_UUID)
    for _ in range(jumbf.MAX_DEPTH + 4):
        deep = jumbf.SuperBox("c2pa", STORE_UUID, [deep])
    many = jumbf.SuperBox("c2pa", STORE_UUID, [jumbf.ContentBox(b"free", b"")] * (jumbf.MAX_BOXES + 10))
    return [jumbf.write(deep), jumbf.write(many)]


def check_hostile_stores(data: bytes, seed: int) -> None:
    """Every reader of a store raises CodecError subclasses only for broken stores."""
    good = carriers.carrier_for(out := ml_dsa_embedded(data)).find(out).store
    for store in [*hostile_stores(good, seed=seed, mutations=60), *jumbf_bombs()]:
        hostile = splice_store(data, store)
        for read in (read_manifest, validate_upstream, lambda d: verify_manifest(d, verify_ml_dsa)):
            with contextlib.suppress(CodecError):
                read(hostile)


def refused(data: bytes) -> bool:
    """Whether every reader refuses `data` with a CodecError (never another exception, never a store)."""
    for read in (read_manifest, validate_upstream, strip_manifest):
        try:
            read(data)
        except CodecError:
            continue
        return False
    return True
