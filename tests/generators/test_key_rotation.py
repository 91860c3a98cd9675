"""KEY_ENCRYPTION_KEY rotation as signing sees it: old private keys keep signing after a new key is added,
new ones are sealed under the newest id, and a key whose id was removed too early answers 503."""

import io
import logging

import pytest

from billing.models import UsageCounter
from core.sealing import sealed_key_id
from generators.models import GeneratorKey
from generators.selectors import current_key
from provenance.models import Record
from record_format import crypto
from record_format.payload import signed_payload_bytes
from tests import factories
from tests.key_rings import NEW_ONLY, OLD_SECRET, ROTATED, make_release_1_private_key, private_key_ids
from tests.media import photo_bytes

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _deployed_before_rings(settings):
    settings.KEY_ENCRYPTION_KEY = OLD_SECRET  # one plain secret, as every deployment before key rings


@pytest.fixture
def generator(org):
    return factories.make_generator(org=org, formats=["image"])


def _sign(key_client, org, generator):
    return key_client(org).post("/v1/sign", {"content": io.BytesIO(photo_bytes("coffee", "jpeg")),
                                             "model": "m", "generator_id": str(generator.pk)}, format="multipart")


def _assert_signed_by(response, generator) -> None:
    assert response.status_code == 201, response.content[:300]
    record = Record.objects.get(pk=response["X-Service-Record-Id"])
    key = current_key(generator_id=generator.pk)
    assert crypto.verify(bytes(key.public_key), signed_payload_bytes(**record.signed_payload), bytes(record.signature))


def test_a_plain_secret_seals_under_the_legacy_id(generator):
    assert private_key_ids() == ["legacy"]


def test_keys_sealed_before_rings_still_sign_after_a_new_key_is_added(settings, key_client, org, generator):
    make_release_1_private_key(current_key(generator_id=generator.pk))
    settings.KEY_ENCRYPTION_KEY = ROTATED
    _assert_signed_by(_sign(key_client, org, generator), generator)
    assert bytes(current_key(generator_id=generator.pk).encrypted_private_key)[0] == 0x01  # read, not rewritten


def test_new_keys_are_sealed_under_the_newest_id(settings, key_client, org, generator):
    settings.KEY_ENCRYPTION_KEY = ROTATED
    fresh = factories.make_generator(org=org, name="fresh")
    assert key_client(org).post(f"/v1/generators/{generator.pk}/rotate", {}, format="json").status_code == 200
    assert sealed_key_id(bytes(current_key(generator_id=fresh.pk).encrypted_private_key)) == "k2"
    assert sealed_key_id(bytes(current_key(generator_id=generator.pk).encrypted_private_key)) == "k2"
    _assert_signed_by(_sign(key_client, org, generator), generator)


def test_a_key_under_a_removed_id_answers_503_key_unavailable_and_stores_nothing(settings, key_client, org,
                                                                                 generator, caplog):
    settings.KEY_ENCRYPTION_KEY = NEW_ONLY  # the old key removed before the keys were resealed
    with caplog.at_level(logging.ERROR, logger="generators.services"):
        response = _sign(key_client, org, generator)
    assert response.status_code == 503
    # A 5xx envelope carries the request id of the log lines that name the generator and key id.
    assert response.json() == {"error": "key_unavailable", "message": response.json()["message"],
                               "request_id": response["X-Request-Id"]}
    assert "legacy" in caplog.text and OLD_SECRET not in caplog.text
    assert Record.objects.count() == 0 and not UsageCounter.objects.filter(signatures_used__gt=0).exists()


def test_a_tampered_sealed_key_answers_503(key_client, org, generator):
    key = current_key(generator_id=generator.pk)
    blob = bytearray(key.encrypted_private_key)
    blob[-1] ^= 0x01
    GeneratorKey.objects.filter(pk=key.pk).update(encrypted_private_key=bytes(blob))
    response = _sign(key_client, org, generator)
    assert (response.status_code, response.json()["error"]) == (503, "key_unavailable")
    assert Record.objects.count() == 0


def test_the_c2pa_embed_answers_503_too_when_the_key_does_not_unseal(settings, key_client, growth_org):
    factories.make_user(org=growth_org, role="owner")
    generator = factories.make_generator(org=growth_org, formats=["image"])
    signed = _sign(key_client, growth_org, generator)
    assert signed.status_code == 201
    settings.KEY_ENCRYPTION_KEY = NEW_ONLY
    response = key_client(growth_org).post(f"/v1/records/{signed['X-Service-Record-Id']}/c2pa/embed",
                                           {"content": io.BytesIO(signed.content)}, format="multipart")
    assert (response.status_code, response.json()["error"]) == (503, "key_unavailable")
