"""POST /v1/sign with SIGNER_SOCKET set: every signature (the record's, a hybrid manifest's two) comes from a
real `manage.py signer` process on the same PostgreSQL database, and this process, given a key-encryption key
that unseals nothing, never needs one (here the certificates are issued before the swap; issuing them through
the signer is tests/signer/test_authority_through_the_signer.py). PostgreSQL only: the signer must see the
test's rows."""

import io
from pathlib import Path

import pytest
from dilithium_py.ml_dsa import ML_DSA_65
from django.db import connection

from generators.certificates import generator_c2pa_credentials
from media_codecs.c2pa import read_manifest
from media_codecs.c2pa.manifest import countersign_structure
from provenance.models import Record
from record_format.payload import signed_payload_bytes
from tests import factories
from tests.signer.processes import signer_environment, start_signer, stop

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor != "postgresql", reason="the signer process needs the test's database"),
]
ROOT = Path(__file__).resolve().parents[2]
SIGNER_SECRET = "signer-integration-secret-0123456789abcdef"


@pytest.fixture
def signer(settings, tmp_path):
    path = str(tmp_path / "signer.sock")
    process = start_signer(signer_environment(settings, KEY_ENCRYPTION_KEY=settings.KEY_ENCRYPTION_KEY,
                                              SIGNER_SECRET=SIGNER_SECRET), path)
    settings.SIGNER_SOCKET, settings.SIGNER_SECRET = path, SIGNER_SECRET
    yield process
    stop(process)


def test_signing_and_a_hybrid_manifest_come_from_the_signer_process(signer, key_client, growth_org, settings):
    factories.make_user(org=growth_org, role="owner")
    generator = factories.make_generator(org=growth_org, formats=["image"], c2pa_signing="hybrid")
    key = generator.keys.get()
    generator_c2pa_credentials(key, private_key=False)  # issued here, before the swap
    settings.KEY_ENCRYPTION_KEY = "elsewhere:a-key-that-unseals-nothing-here-0123456789"  # this process has none
    from tests.media import photo_bytes

    response = key_client(growth_org).post("/v1/sign", {"content": io.BytesIO(photo_bytes("astronaut", "jpeg")),
                                                        "model": "m", "generator_id": str(generator.pk),
                                                        "c2pa": "true"}, format="multipart")
    assert response.status_code == 201, response.content[:300]
    record = Record.objects.get(pk=response["X-Service-Record-Id"])
    message = signed_payload_bytes(**record.signed_payload)
    assert ML_DSA_65.verify(bytes(key.public_key), message, bytes(record.signature))
    manifest = read_manifest(response.content)
    counter_protected, _, counter_signature = manifest.countersignature
    assert ML_DSA_65.verify(bytes(key.public_key), countersign_structure(
        manifest.protected_bytes, counter_protected, manifest.claim_bytes, manifest.signature), counter_signature)


def test_a_signer_that_stops_makes_signing_a_503_with_nothing_stored(signer, key_client, org):
    factories.make_user(org=org, role="owner")
    generator = factories.make_generator(org=org, formats=["image"])
    signer.terminate()
    signer.wait(timeout=60)
    from tests.media import photo_bytes

    response = key_client(org).post("/v1/sign", {"content": io.BytesIO(photo_bytes("astronaut", "png")),
                                                 "model": "m", "generator_id": str(generator.pk)}, format="multipart")
    assert response.status_code == 503 and response.json()["error"] == "service_unavailable"
    assert response.has_header("Retry-After")
    assert not Record.objects.filter(org=org).exists()
