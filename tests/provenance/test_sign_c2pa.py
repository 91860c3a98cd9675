"""POST /v1/sign with c2pa=true, and the embed route, in every format C2PA readers read: c2pa-python trusts a
hybrid manifest under the deployment's trust anchors (time stamps from a real local TSA included), reads an
ML-DSA-65 one with only the algorithm unknown, and our verifier reports every check; dilithium-py verifies
the post-quantum signature with the generator's published key."""

import base64
import functools
import io
import json

import cbor2
import pytest
from dilithium_py.ml_dsa import ML_DSA_65

from billing.models import UsageCounter
from generators.models import Generator
from media_codecs import jumbf
from media_codecs.c2pa import read_manifest, strip_manifest
from media_codecs.c2pa.manifest import COSE_COUNTERSIGNATURE, countersign_structure, sig_structure
from provenance.models import Record
from tests import factories
from tests.audio import ffmpeg_mp3, flac_bytes, tone, wav_bytes
from tests.c2pa_upstream import READ_SETTINGS
from tests.media import photo_bytes
from tests.pdf_samples import text_pdf
from tests.tsa_server import OPENSSL
from tests.verification.uploads import sign, verify
from tests.video import make_video

c2pa = pytest.importorskip("c2pa")
pytestmark = [pytest.mark.django_db, pytest.mark.skipif(OPENSSL is None, reason="needs the openssl command")]

FAMILY = {"jpeg": "image", "png": "image", "webp": "image", "wav": "audio", "mp3": "audio", "flac": "audio",
          "mp4": "video", "mov": "video", "pdf": "text"}
MIME = {"jpeg": "image/jpeg", "png": "image/png", "webp": "image/webp", "wav": "audio/wav", "mp3": "audio/mpeg",
        "flac": "audio/flac", "mp4": "video/mp4", "mov": "video/quicktime", "pdf": "application/pdf"}
BINDING = {"mp4": "assertion.bmffHash.match", "mov": "assertion.bmffHash.match"}


@functools.cache
def content(fmt: str) -> bytes:
    if fmt in ("jpeg", "png", "webp"):
        return photo_bytes("astronaut", fmt)
    if fmt in ("wav", "flac", "mp3"):
        samples = tone(2.0)
        return {"wav": wav_bytes, "flac": flac_bytes, "mp3": ffmpeg_mp3}[fmt](samples)
    if fmt in ("mp4", "mov"):
        return make_video(fmt, seconds=1.0)
    return text_pdf()


@pytest.fixture
def growth(growth_org):
    factories.make_user(org=growth_org, role="owner")
    return growth_org


@pytest.fixture
def client(key_client, growth):
    return key_client(growth)


def _generator(org, signing: str):
    return factories.make_generator(org=org, formats=["image", "audio", "video", "text"], c2pa_signing=signing)


def _trusted_report(api_client, data: bytes, mime: str) -> dict:
    bundle = api_client.get("/v1/c2pa/trust-anchors?format=pem")
    assert bundle.status_code == 200 and bundle["Content-Type"].startswith("application/x-pem-file")
    context = c2pa.Context.from_dict({**READ_SETTINGS, "trust": {"trust_anchors": bundle.content.decode()}})
    return json.loads(c2pa.Reader(mime, io.BytesIO(data), context=context).json())


def _codes(report: dict, kind: str) -> list[str]:
    return [item["code"] for item in report["validation_results"]["activeManifest"][kind]]


def _published_key(api_client, generator) -> bytes:
    keys = api_client.get(f"/v1/keys/{generator.pk}").json()["public_keys"]
    return base64.b64decode(keys[-1]["key"])


@pytest.mark.parametrize("fmt", list(FAMILY))
def test_a_hybrid_generator_signs_a_file_validators_trust(fmt, client, growth, api_client, stamping):
    generator = _generator(growth, "hybrid")
    response = sign(client, generator, content(fmt), model="gen-model", c2pa="true")
    assert response.status_code == 201, response.content[:300]
    assert response["X-Service-C2pa"] == "embedded" and response["Content-Type"].startswith(MIME[fmt])
    signed = response.content
    report = _trusted_report(api_client, signed, MIME[fmt])
    assert report["validation_state"] == "Trusted", report["validation_results"]
    assert _codes(report, "failure") == []
    success = _codes(report, "success")
    assert BINDING.get(fmt, "assertion.dataHash.match") in success
    assert {"timeStamp.validated", "timeStamp.trusted", "claimSignature.validated"} <= set(success)
    # One signature of the quota, and the record's own signature stamped in the same round trip.
    assert UsageCounter.objects.get(org=growth).signatures_used == 1
    record = Record.objects.get(pk=response["X-Service-Record-Id"])
    assert record.signature_timestamp is not None
    # dilithium-py checks the ML-DSA-65 countersignature with the key GET /v1/keys publishes.
    manifest = read_manifest(signed)
    counter_protected, _, counter_signature = manifest.countersignature
    message = countersign_structure(manifest.protected_bytes, counter_protected, manifest.claim_bytes,
                                    manifest.signature)
    assert ML_DSA_65.verify(_published_key(api_client, generator), message, counter_signature)
    # Our verifier: authentic through the manifest, every check reported.
    result = verify(api_client, signed)
    assert result["authentic"] and result["token_source"] == "c2pa", result
    checks = {check["check"]: check["status"] for check in result["c2pa"]["checks"]}
    assert checks == {"claim_signature": "valid", "pq_signature": "valid", "certificate_chain": "trusted",
                      "time_stamp": "valid", "hard_binding": "valid", "assertions": "valid", "ingredients": "none"}
    assert result["c2pa"]["signing"] == "hybrid" and result["c2pa"]["valid"] and result["c2pa"]["time"]
    assert result["signature_timestamp"]["status"] == "valid"


@pytest.mark.parametrize("fmt", ["jpeg", "wav", "mp4", "pdf"])
def test_an_ml_dsa_generator_signs_as_before(fmt, client, growth, api_client):
    generator = _generator(growth, "ml-dsa-65")
    response = sign(client, generator, content(fmt), model="gen-model", c2pa="true")
    assert response.status_code == 201, response.content[:300]
    report = _trusted_report(api_client, response.content, MIME[fmt])
    assert _codes(report, "failure") == ["algorithm.unsupported", "claimSignature.mismatch"]
    assert BINDING.get(fmt, "assertion.dataHash.match") in _codes(report, "success")
    manifest = read_manifest(response.content)
    message = sig_structure(manifest.protected_bytes, manifest.claim_bytes)
    assert ML_DSA_65.verify(_published_key(api_client, generator), message, manifest.signature)
    result = verify(api_client, response.content)
    assert result["authentic"] and result["c2pa"]["signing"] == "ml-dsa-65", result
    checks = {check["check"]: check["status"] for check in result["c2pa"]["checks"]}
    assert checks["claim_signature"] == checks["pq_signature"] == "valid"
    assert checks["time_stamp"] == "absent"  # no authority configured here


def _with_unprotected(signed: bytes, change) -> bytes:
    """The signed JPEG with its claim signature's unprotected header changed (nothing signed changes), the pad
    resized so the store keeps its length (the binding excludes exactly the store's bytes)."""
    manifest = read_manifest(signed)
    old = jumbf.read(manifest.store_boxes[manifest.label]).child("c2pa.signature").content(b"cbor")
    unprotected = dict(manifest.unprotected)
    change(unprotected)
    pad = len(unprotected.pop("pad"))
    def encoded(pad_size: int) -> bytes:
        header = {**unprotected, "pad": bytes(pad_size)}
        return cbor2.dumps(cbor2.CBORTag(18, [manifest.protected_bytes, header, None, manifest.signature]))
    replaced = encoded(pad + len(old) - len(encoded(pad)))
    assert len(replaced) == len(old) and signed.count(old) == 1
    return signed.replace(old, replaced)


def test_a_removed_or_altered_pq_signature_is_reported(client, growth, api_client):
    generator = _generator(growth, "hybrid")
    signed = sign(client, generator, content("jpeg"), model="gen-model", c2pa="true").content

    def removed(unprotected: dict) -> None:
        del unprotected[COSE_COUNTERSIGNATURE]

    def altered(unprotected: dict) -> None:
        counter = list(unprotected[COSE_COUNTERSIGNATURE])
        counter[2] = bytes([counter[2][0] ^ 1]) + counter[2][1:]
        unprotected[COSE_COUNTERSIGNATURE] = counter

    for change, status in ((removed, "absent"), (altered, "invalid")):
        result = verify(api_client, _with_unprotected(signed, change))
        checks = {check["check"]: check["status"] for check in result["c2pa"]["checks"]}
        assert checks["pq_signature"] == status and checks["claim_signature"] == "valid", result
        assert not result["authentic"] and result["reason"] == "signature_invalid"
        assert not result["c2pa"]["valid"]


def test_formats_without_a_carrier_sign_with_their_token_alone(client, growth):
    generator = _generator(growth, "hybrid")
    response = sign(client, generator, make_video("mkv", seconds=1.0), model="gen-model", c2pa="true")
    assert response.status_code == 201 and response["X-Service-C2pa"] == "none"


def test_c2pa_on_the_free_plan_is_402_before_any_work(key_client, org):
    factories.make_user(org=org, role="owner")
    generator = _generator(org, "hybrid")
    response = sign(key_client(org), generator, content("jpeg"), model="gen-model", c2pa="true")
    assert response.status_code == 402 and response.json()["error"] == "plan_required"
    assert not Record.objects.filter(org=org).exists()


@pytest.mark.parametrize("fmt", ["webp", "flac", "mov", "pdf"])
def test_the_embed_route_adds_a_trusted_manifest_to_a_signed_file(fmt, client, growth, api_client):
    generator = _generator(growth, "hybrid")
    response = sign(client, generator, content(fmt), model="gen-model")
    assert response.status_code == 201 and response["X-Service-C2pa"] == "none"
    embedded = client.post(f"/v1/records/{response['X-Service-Record-Id']}/c2pa/embed",
                           {"content": io.BytesIO(response.content)}, format="multipart")
    assert embedded.status_code == 200, embedded.content[:300]
    report = _trusted_report(api_client, embedded.content, MIME[fmt])
    assert report["validation_state"] == "Trusted" and _codes(report, "failure") == []
    assert strip_manifest(embedded.content) == strip_manifest(response.content)
    assert UsageCounter.objects.get(org=growth).signatures_used == 1


@pytest.mark.parametrize("fmt", ["jpeg", "wav", "mp4"])
def test_an_upstream_manifest_becomes_the_trusted_manifests_ingredient(fmt, client, growth, api_client):
    from tests.c2pa_upstream import c2pa_sign

    generator = _generator(growth, "hybrid")
    upstream = c2pa_sign(content(fmt), MIME[fmt])
    response = sign(client, generator, upstream, model="gen-model", c2pa="true")
    assert response.status_code == 201, response.content[:300]
    report = _trusted_report(api_client, response.content, MIME[fmt])
    assert report["validation_state"] == "Trusted" and _codes(report, "failure") == [], report["validation_results"]
    [ingredient] = report["manifests"][report["active_manifest"]]["ingredients"]
    assert ingredient["relationship"] == "parentOf"
    result = verify(api_client, response.content)
    checks = {check["check"]: check["status"] for check in result["c2pa"]["checks"]}
    assert result["authentic"] and checks["ingredients"] == "valid", result


@pytest.mark.parametrize("fmt", ["png", "wav"])
def test_the_manifests_action_carries_the_declared_source_type(fmt, client, growth, api_client):
    generator = _generator(growth, "hybrid")
    Generator.objects.filter(pk=generator.pk).update(digital_source_type="compositeWithTrainedAlgorithmicMedia")
    response = sign(client, generator, content(fmt), model="gen-model", c2pa="true")
    assert response.status_code == 201, response.content[:300]
    report = _trusted_report(api_client, response.content, MIME[fmt])
    manifest = report["manifests"][report["active_manifest"]]
    actions = next(a["data"]["actions"] for a in manifest["assertions"] if a["label"].startswith("c2pa.actions"))
    assert actions[0]["action"] == "c2pa.created"
    assert actions[0]["digitalSourceType"] == ("http://cv.iptc.org/newscodes/digitalsourcetype/"
                                               "compositeWithTrainedAlgorithmicMedia")
    assert _codes(report, "failure") == []
