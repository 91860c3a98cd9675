import base64

import pytest

from audit.models import AuditEvent
from core.keyring import private_key_sealing_ring
from core.sealing import unseal
from generators.models import Generator, GeneratorKey
from generators.services import generator_signing_seed
from record_format import crypto
from tests import factories

pytestmark = pytest.mark.django_db
URL = "/v1/generators"


def _public_key_body(raw: bytes | None = None, **overrides) -> dict:
    raw = raw if raw is not None else crypto.generate_keypair()[1]
    return {"kid": "k1", "algorithm": "ml-dsa-65", "key": base64.b64encode(raw).decode(), **overrides}


def test_registering_without_a_key_makes_a_server_managed_generator(key_client, org):
    response = key_client(org).post(URL, {"name": "diffusion"}, format="json")
    assert response.status_code == 201
    body = response.json()
    assert body["mode"] == "server" and body["status"] == "active" and body["name"] == "diffusion"
    assert body["org_id"] == str(org.pk) and body["created_at"].endswith("Z")
    assert body["supported_formats"] == ["image", "audio", "text", "video"]
    [key] = body["public_keys"]
    assert key["algorithm"] == "ml-dsa-65" and len(base64.b64decode(key["key"])) == 1952
    stored = GeneratorKey.objects.get(generator_id=body["generator_id"])
    assert stored.kid == key["kid"] == crypto.key_id(bytes(stored.public_key))
    event = AuditEvent.objects.get(org=org, type="key_created")
    assert event.metadata["generator_id"] == body["generator_id"]


def test_a_server_managed_private_key_is_sealed_at_rest(key_client, org):
    generator_id = key_client(org).post(URL, {"name": "g"}, format="json").json()["generator_id"]
    stored = GeneratorKey.objects.get(generator_id=generator_id)
    sealed = bytes(stored.encrypted_private_key)
    seed = generator_signing_seed(stored)
    assert len(seed) == 32 and seed not in sealed
    assert crypto.public_key_from_seed(seed) == bytes(stored.public_key)
    # The sealed blob is bound to its row: decrypting it as another generator's key fails.
    with pytest.raises(Exception):
        unseal(sealed, private_key_sealing_ring().keys, associated_data=b"generator-key:other:kid")


def test_no_private_material_is_ever_returned(key_client, org):
    client = key_client(org)
    created = client.post(URL, {"name": "g"}, format="json")
    sealed = bytes(GeneratorKey.objects.get().encrypted_private_key)
    for response in (created, client.get(URL), client.get(f"{URL}/{created.json()['generator_id']}")):
        text = response.content.decode()
        assert "private" not in text and base64.b64encode(sealed).decode() not in text


def test_registering_with_a_public_key_makes_a_client_managed_generator(key_client, org):
    raw = crypto.generate_keypair()[1]
    body = {"name": "local", "public_keys": [_public_key_body(raw)], "supported_formats": ["text", "image"]}
    response = key_client(org).post(URL, body, format="json")
    assert response.status_code == 201
    created = response.json()
    assert created["mode"] == "client"
    assert created["supported_formats"] == ["image", "text"]
    assert created["public_keys"] == [{"kid": "k1", "algorithm": "ml-dsa-65", "key": base64.b64encode(raw).decode()}]
    assert GeneratorKey.objects.get().encrypted_private_key is None


@pytest.mark.parametrize(
    ("key_body", "field"),
    [
        (_public_key_body(algorithm="ml-dsa-44"), "algorithm"),
        (_public_key_body(algorithm="ed25519"), "algorithm"),
        (_public_key_body(raw=b"\x01" * 1312), "key"),  # an ML-DSA-44 sized key
        (_public_key_body(raw=b"\x01" * 1953), "key"),
        (_public_key_body(key="not base64!!"), "key"),
        (_public_key_body(kid="bad kid with spaces"), "public_keys"),
    ],
)
def test_a_wrong_public_key_is_400(key_client, org, key_body, field):
    response = key_client(org).post(URL, {"name": "g", "public_keys": [key_body]}, format="json")
    assert response.status_code == 400
    assert response.json()["error"] == "validation_error"
    assert field in response.json()["details"]
    assert not Generator.objects.exists()


def test_two_public_keys_at_registration_are_400(key_client, org):
    response = key_client(org).post(URL, {"name": "g", "public_keys": [_public_key_body(), _public_key_body()]},
                                    format="json")
    assert response.status_code == 400


@pytest.mark.parametrize("formats", [[], ["pdf"], "image", ["image", "image", "audio", "text", "video"]])
def test_bad_supported_formats_are_400(key_client, org, formats):
    response = key_client(org).post(URL, {"name": "g", "supported_formats": formats}, format="json")
    assert response.status_code == 400


def test_list_and_fetch_are_scoped_to_the_organization(key_client, org, other_org):
    mine = factories.make_generator(org=org, name="mine")
    theirs = factories.make_generator(org=other_org, name="theirs")
    client = key_client(org)
    listed = client.get(URL).json()["generators"]
    assert [g["generator_id"] for g in listed] == [str(mine.pk)]
    assert set(listed[0]) == {"generator_id", "org_id", "name", "status", "mode", "supported_formats", "c2pa_signing",
                              "provider_name", "system_name", "system_version", "digital_source_type", "label_text",
                              "label_position", "label_size", "public_keys"}
    assert client.get(f"{URL}/{mine.pk}").status_code == 200
    for path in (f"{URL}/{theirs.pk}", f"{URL}/{theirs.pk}/revoke", f"{URL}/{theirs.pk}/rotate"):
        method = client.get if path.endswith(str(theirs.pk)) else (client.put if "revoke" in path else client.post)
        response = method(path, {}, format="json")
        assert response.status_code == 404, path
        assert response.json()["error"] == "not_found"
    assert Generator.objects.get(pk=theirs.pk).status == "active"


def test_a_session_can_manage_generators_too(owner_client, org):
    assert owner_client.post(URL, {"name": "g"}, format="json").status_code == 201


def test_generators_need_a_credential(api_client):
    assert api_client.get(URL).status_code == 401
    assert api_client.post(URL, {"name": "g"}, format="json").status_code == 401


def test_unknown_and_malformed_ids_are_404(key_client, org):
    client = key_client(org)
    assert client.get(f"{URL}/00000000-0000-0000-0000-000000000000").status_code == 404
    assert client.get(f"{URL}/not-a-uuid").status_code == 404


def test_revoke_is_final_audited_announced_and_idempotent(key_client, org, emitted):
    generator = factories.make_generator(org=org)
    client = key_client(org)
    response = client.put(f"{URL}/{generator.pk}/revoke")
    assert response.status_code == 200
    assert response.json() == {"generator_id": str(generator.pk), "status": "revoked"}
    assert client.put(f"{URL}/{generator.pk}/revoke").status_code == 200
    assert AuditEvent.objects.filter(org=org, type="key_revoked").count() == 1
    assert [kind for _, kind, _ in emitted] == ["generator.revoked"]
    assert client.get(f"{URL}/{generator.pk}").json()["status"] == "revoked"


def test_rotating_a_server_managed_generator_keeps_the_old_key_listed(key_client, org, api_client, emitted):
    generator = factories.make_generator(org=org)
    old_kid = GeneratorKey.objects.get().kid
    response = key_client(org).post(f"{URL}/{generator.pk}/rotate", {}, format="json")
    assert response.status_code == 200
    [current] = response.json()["public_keys"]
    assert current["kid"] != old_kid
    keys = api_client.get(f"/v1/keys/{generator.pk}").json()["public_keys"]
    assert [k["kid"] for k in keys] == [old_kid, current["kid"]]
    assert keys[0]["retired_at"] is not None and keys[1]["retired_at"] is None
    assert AuditEvent.objects.filter(org=org, type="key_created").count() == 2
    assert [kind for _, kind, _ in emitted] == ["generator.key_rotated"]
    assert emitted[0][2]["previous_kid"] == old_kid


def test_rotating_a_client_managed_generator_needs_the_new_public_key(key_client, org):
    generator, _ = factories.make_client_generator(org=org)
    client = key_client(org)
    assert client.post(f"{URL}/{generator.pk}/rotate", {}, format="json").status_code == 400
    new = _public_key_body(kid="k2")
    response = client.post(f"{URL}/{generator.pk}/rotate", {"public_key": new}, format="json")
    assert response.status_code == 200
    assert response.json()["public_keys"][0]["kid"] == "k2"
    again = client.post(f"{URL}/{generator.pk}/rotate", {"public_key": new}, format="json")
    assert again.status_code == 400  # kid already used


def test_a_server_managed_generator_refuses_a_supplied_rotation_key(key_client, org):
    generator = factories.make_generator(org=org)
    response = key_client(org).post(f"{URL}/{generator.pk}/rotate", {"public_key": _public_key_body()},
                                    format="json")
    assert response.status_code == 400


def test_a_revoked_generator_cannot_rotate(key_client, org):
    generator = factories.make_generator(org=org)
    client = key_client(org)
    client.put(f"{URL}/{generator.pk}/revoke")
    assert client.post(f"{URL}/{generator.pk}/rotate", {}, format="json").status_code == 404


def test_public_keys_are_public(api_client, org):
    generator = factories.make_generator(org=org)
    response = api_client.get(f"/v1/keys/{generator.pk}")
    assert response.status_code == 200
    body = response.json()
    assert body["generator_id"] == str(generator.pk) and body["status"] == "active"
    [key] = body["public_keys"]
    assert set(key) == {"kid", "algorithm", "key", "created_at", "retired_at", "certificates"}
    assert api_client.get("/v1/keys/00000000-0000-0000-0000-000000000000").status_code == 404
    assert api_client.get("/v1/keys/nope").status_code == 404


def test_the_admin_shows_generators_without_private_keys(client, org):
    from accounts.models import User

    generator = factories.make_generator(org=org)
    sealed = bytes(GeneratorKey.objects.get().encrypted_private_key)
    client.force_login(User.objects.create_superuser("staff@example.com", "pw-staff-123"))
    page = client.get(f"/admin/generators/generator/{generator.pk}/change/")
    assert page.status_code == 200
    assert "encrypted_private_key" not in page.content.decode()
    assert base64.b64encode(sealed).decode()[:20] not in page.content.decode()
