import base64
import copy

import pytest

from audit.models import AuditEvent
from provenance.models import Record
from tests import factories

pytestmark = pytest.mark.django_db
URL = "/v1/records"


@pytest.fixture
def client_gen(org):
    return factories.make_client_generator(org=org)


@pytest.fixture
def body(client_gen):
    generator, seed = client_gen
    return factories.record_body(generator=generator, seed=seed, phash="8f0f0f0f0f0f0f0f")


def test_a_signed_record_is_stored_and_returns_token_and_id(key_client, org, body, emitted):
    response = key_client(org).post(URL, body, format="json")
    assert response.status_code == 201
    created = response.json()
    assert set(created) == {"token", "record_id"}
    assert created["token"].startswith("svc_") and len(created["token"]) <= 128
    record = Record.objects.get(pk=created["record_id"])
    assert (record.content_hash, record.model, record.watermark_id) == (body["content_hash"], "model-x", "wm-1")
    assert record.phash == "8f0f0f0f0f0f0f0f" and record.phash_value == 0x8F0F0F0F0F0F0F0F - (1 << 64)
    assert record.org_id == org.pk
    event = AuditEvent.objects.get(org=org, type="sign")
    assert event.metadata == {"record_id": created["record_id"], "generator_id": body["generator_id"],
                              "model": "model-x"}
    assert [kind for _, kind, _ in emitted] == ["record.created"]


def test_the_public_record_has_the_addendum_fields(key_client, org, body, api_client):
    created = key_client(org).post(URL, body, format="json").json()
    response = api_client.get(f"{URL}/{created['record_id']}")
    assert response.status_code == 200
    record = response.json()
    assert set(record) == {"record_id", "generator_id", "org", "model", "watermark_id", "content_hash", "phash",
                           "signature", "signature_algorithm", "kid", "signed_payload", "signed_at", "format",
                           "token", "log", "signature_timestamp"}
    assert record["signature_timestamp"] is None  # no time-stamp authority in these tests
    assert record["signature"] == body["signature"] and record["signature_algorithm"] == "ml-dsa-65"
    assert record["signed_payload"] == body["signed_payload"] and record["token"] == created["token"]
    assert record["org"] == org.name and record["format"] is None and record["signed_at"].endswith("Z")


def test_a_client_phash_is_stored_as_an_image_phash_and_shown_unchanged(key_client, org, body, api_client):
    created = key_client(org).post(URL, body, format="json").json()
    record = Record.objects.get(pk=created["record_id"])
    assert (record.fingerprint_kind, record.phash_value) == ("image-phash", 0x8F0F0F0F0F0F0F0F - (1 << 64))
    assert api_client.get(f"{URL}/{created['record_id']}").json()["phash"] == "8f0f0f0f0f0f0f0f"


def test_a_video_records_phash_is_a_video_phash_and_its_format_is_shown(key_client, org, body, api_client):
    created = key_client(org).post(URL, {**body, "format": "video"}, format="json").json()
    record = Record.objects.get(pk=created["record_id"])
    assert (record.fingerprint_kind, record.format) == ("video-phash", "video")
    assert api_client.get(f"{URL}/{created['record_id']}").json()["format"] == "video"


def test_a_format_the_generator_does_not_sign_is_400_format_not_supported(key_client, org, body, client_gen):
    generator, _ = client_gen
    generator.supported_formats = ["image"]
    generator.save(update_fields=["supported_formats"])
    response = key_client(org).post(URL, {**body, "format": "audio"}, format="json")
    assert response.status_code == 400 and response.json()["error"] == "format_not_supported"
    assert not Record.objects.exists()


@pytest.mark.parametrize("family", ["audio", "text"])
def test_a_phash_on_audio_or_text_is_400(key_client, org, body, family):
    response = key_client(org).post(URL, {**body, "format": family}, format="json")
    assert response.status_code == 400 and response.json()["error"] == "validation_error"
    assert set(response.json()["details"]) == {"phash"}


def test_an_unknown_format_is_400(key_client, org, body):
    response = key_client(org).post(URL, {**body, "format": "hologram"}, format="json")
    assert response.status_code == 400 and set(response.json()["details"]) == {"format"}


def test_a_record_without_phash_has_no_fingerprint_kind(key_client, org, body):
    del body["phash"]
    created = key_client(org).post(URL, body, format="json").json()
    assert Record.objects.get(pk=created["record_id"]).fingerprint_kind is None


def test_an_unknown_record_is_404(api_client):
    assert api_client.get(f"{URL}/00000000-0000-0000-0000-000000000000").status_code == 404
    assert api_client.get(f"{URL}/not-a-uuid").status_code == 404


def test_the_c2pa_export_has_the_spec_shape_and_caches_an_hour(key_client, org, body, api_client):
    created = key_client(org).post(URL, body, format="json").json()
    response = api_client.get(f"{URL}/{created['record_id']}/c2pa")
    assert response.status_code == 200
    assert response["Cache-Control"] == "public, max-age=3600"
    manifest = response.json()
    assert set(manifest["@context"]) == {"c2pa", "service"}
    assert manifest["claim_generator"] and manifest["instance_id"] == f"service:{created['record_id']}"
    actions, provenance, hashes = manifest["assertions"]
    assert actions["label"] == "c2pa.actions"
    assert actions["data"]["actions"][0]["action"] == "c2pa.created"
    assert actions["data"]["actions"][0]["when"].endswith("Z")
    assert provenance == {"label": "service.provenance", "data": {
        "record_id": created["record_id"], "model": "model-x", "signature_algorithm": "ML-DSA-65 (NIST FIPS 204)"}}
    assert hashes == {"label": "c2pa.hash.data",
                      "data": {"name": "SHA3-256", "hash": body["content_hash"].removeprefix("sha3-256:")}}
    assert api_client.get(f"{URL}/00000000-0000-0000-0000-000000000000/c2pa").status_code == 404


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (lambda b: b.update(content_hash="sha256:" + "a" * 64), "content_hash"),
        (lambda b: b.update(content_hash="sha3-256:" + "A" * 64), "content_hash"),
        (lambda b: b.update(content_hash="sha3-256:" + "a" * 63), "content_hash"),
        (lambda b: b.update(content_hash="sha3-256:" + "a" * 64 + "\n"), "content_hash"),
        (lambda b: b.update(signature=base64.b64encode(b"x" * 2420).decode()), "signature"),
        (lambda b: b.update(signature="@@@not-base64@@@"), "signature"),
        (lambda b: b.update(phash="XYZ"), "phash"),
        (lambda b: b.update(phash="0123456789abcdeF"), "phash"),
        (lambda b: b.pop("signed_payload"), "signed_payload"),
        (lambda b: b.update(signed_payload="text"), "signed_payload"),
        (lambda b: b.pop("watermark_id"), "watermark_id"),
        (lambda b: b.update(model="m" * 201), "model"),
        (lambda b: b["signed_payload"].update(model="other-model"), "signed_payload"),
        (lambda b: b["signed_payload"].update(extra="field"), "signed_payload"),
    ],
)
def test_invalid_records_are_400_with_field_details(key_client, org, body, mutate, field):
    body = copy.deepcopy(body)
    mutate(body)
    response = key_client(org).post(URL, body, format="json")
    assert response.status_code == 400
    assert response.json()["error"] == "validation_error"
    assert field in response.json()["details"]
    assert not Record.objects.exists()


def test_a_signature_over_other_content_is_400_signature_invalid(key_client, org, client_gen, body):
    generator, seed = client_gen
    other = factories.record_body(generator=generator, seed=seed, content=b"other content")
    body["signature"] = other["signature"]
    response = key_client(org).post(URL, body, format="json")
    assert response.status_code == 400 and response.json()["error"] == "signature_invalid"
    assert not Record.objects.exists() and not AuditEvent.objects.filter(type="sign").exists()


def test_a_signature_by_another_key_is_400_signature_invalid(key_client, org, client_gen):
    generator, _ = client_gen
    from record_format import crypto

    stranger_seed, _ = crypto.generate_keypair()
    body = factories.record_body(generator=generator, seed=stranger_seed)
    assert key_client(org).post(URL, body, format="json").json()["error"] == "signature_invalid"


def test_another_organizations_generator_is_403(key_client, other_org, body):
    response = key_client(other_org).post(URL, body, format="json")
    assert response.status_code == 403 and response.json()["error"] == "forbidden"
    assert not Record.objects.exists()


def test_an_unknown_generator_is_404(key_client, org, body):
    body = {**body, "generator_id": "00000000-0000-0000-0000-000000000000"}
    body["signed_payload"] = {**body["signed_payload"], "generator_id": body["generator_id"]}
    assert key_client(org).post(URL, body, format="json").status_code == 404


def test_a_revoked_generator_is_404(key_client, org, client_gen, body):
    client = key_client(org)
    client.put(f"/v1/generators/{client_gen[0].pk}/revoke")
    response = client.post(URL, body, format="json")
    assert response.status_code == 404 and response.json()["error"] == "not_found"


def test_a_server_managed_generator_is_400(key_client, org):
    generator = factories.make_generator(org=org)
    from record_format import crypto

    body = factories.record_body(generator=generator, seed=crypto.generate_keypair()[0])
    response = key_client(org).post(URL, body, format="json")
    assert response.status_code == 400 and response.json()["error"] == "generator_server_managed"


def test_records_need_a_valid_key(api_client, org, body, owner_client):
    assert api_client.post(URL, body, format="json").status_code == 401
    key = owner_client.post("/v1/api-keys", {}, format="json").json()
    owner_client.delete(f"/v1/api-keys/{key['key_id']}")
    response = api_client.post(URL, body, format="json", HTTP_AUTHORIZATION=f"Bearer {key['key']}")
    assert response.status_code == 401 and response.json()["error"] == "authentication_required"


def test_after_rotation_new_records_use_the_new_key_and_old_ones_keep_their_kid(key_client, org, client_gen,
                                                                                 api_client):
    from record_format import crypto

    generator, old_seed = client_gen
    client = key_client(org)
    first = client.post(URL, factories.record_body(generator=generator, seed=old_seed), format="json").json()
    new_seed, new_public = crypto.generate_keypair()
    client.post(f"/v1/generators/{generator.pk}/rotate", {"public_key": {
        "kid": "k-new", "algorithm": "ml-dsa-65", "key": base64.b64encode(new_public).decode()}}, format="json")
    old_again = client.post(URL, factories.record_body(generator=generator, seed=old_seed, content=b"2"),
                            format="json")
    assert old_again.json()["error"] == "signature_invalid"
    second = client.post(URL, factories.record_body(generator=generator, seed=new_seed, content=b"2"),
                         format="json").json()
    assert api_client.get(f"{URL}/{second['record_id']}").json()["kid"] == "k-new"
    assert api_client.get(f"{URL}/{first['record_id']}").json()["kid"] != "k-new"
