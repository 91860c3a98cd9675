"""Record signatures carry an RFC 3161 time stamp from the deployment's authority (a real local TSA:
OpenSSL's `ts -reply`), stored with the record, served with it, and checked by OpenSSL itself."""

import base64
import datetime
import io
import subprocess

import pytest
from cryptography.hazmat.primitives import serialization

from billing.models import UsageCounter
from provenance.models import Record
from record_format import timestamp
from tests import factories
from tests.media import photo_bytes
from tests.proc_sockets import free_port
from tests.tsa_server import OPENSSL, LocalTsa

pytestmark = [pytest.mark.django_db(transaction=True),
              pytest.mark.skipif(OPENSSL is None, reason="needs the openssl command")]


def _openssl_verifies(token: bytes, data: bytes, tsa: LocalTsa, tmp_path) -> bool:
    """`openssl ts -verify` of a bare token (-token_in) over the data, trusting the authority's root."""
    (tmp_path / "token.der").write_bytes(token)
    (tmp_path / "data.bin").write_bytes(data)
    (tmp_path / "root.pem").write_bytes(tsa.root.public_bytes(serialization.Encoding.PEM))
    checked = subprocess.run([OPENSSL, "ts", "-verify", "-token_in", "-in", str(tmp_path / "token.der"), "-data",
                              str(tmp_path / "data.bin"), "-CAfile", str(tmp_path / "root.pem")],
                             capture_output=True, text=True, timeout=60)
    return checked.returncode == 0 and "Verification: OK" in checked.stdout


def _sign(client, generator, content: bytes):
    body = {"content": io.BytesIO(content), "model": "diffusion-xl", "generator_id": str(generator.pk)}
    return client.post("/v1/sign", body, format="multipart")


def test_a_signed_file_record_carries_a_token_over_its_signature(key_client, org, stamping, api_client, tmp_path):
    generator = factories.make_generator(org=org, formats=["image"])
    before = datetime.datetime.now(datetime.UTC).replace(microsecond=0)
    response = _sign(key_client(org), generator, photo_bytes("astronaut", "png"))
    assert response.status_code == 201, response.content[:300]
    record = Record.objects.get(pk=response["X-Service-Record-Id"])
    token, signature = bytes(record.signature_timestamp), bytes(record.signature)
    assert _openssl_verifies(token, signature, stamping, tmp_path)
    assert not _openssl_verifies(token, signature[:-1] + bytes([signature[-1] ^ 1]), stamping, tmp_path)
    stamped = timestamp.time_of(token, signature, [stamping.root])
    assert before - datetime.timedelta(seconds=2) <= stamped <= datetime.datetime.now(datetime.UTC)
    served = api_client.get(f"/v1/records/{record.pk}").json()["signature_timestamp"]
    assert base64.b64decode(served["token"]) == token
    assert served["authority"] == "Test Time-Stamping Authority"
    assert datetime.datetime.fromisoformat(served["time"]) == stamped


def test_client_managed_records_and_batches_are_stamped_too(key_client, growth_org, stamping, tmp_path):
    org = growth_org
    factories.make_user(org=org, role="owner", verified=True)
    generator, seed = factories.make_client_generator(org=org)
    one = key_client(org).post("/v1/records", factories.record_body(generator=generator, seed=seed), format="json")
    assert one.status_code == 201, one.content
    items = [factories.record_body(generator=generator, seed=seed, content=f"item {n}".encode()) for n in range(3)]
    batch = key_client(org).post("/v1/records/batch", {"records": items}, format="json")
    assert batch.status_code == 207, batch.content  # the batch answers per item
    ids = [one.json()["record_id"], *(item["record_id"] for item in batch.json()["results"])]
    for record in Record.objects.filter(pk__in=ids):
        assert _openssl_verifies(bytes(record.signature_timestamp), bytes(record.signature), stamping, tmp_path)
    assert stamping.requests >= 4


def test_an_authority_that_fails_stops_signing_before_anything_is_stored(key_client, org, stamping):
    generator = factories.make_generator(org=org, formats=["image"])
    stamping.server.answer_override = (500, "text/plain", b"down")
    try:
        response = _sign(key_client(org), generator, photo_bytes("astronaut", "png"))
    finally:
        stamping.server.answer_override = None
    assert response.status_code == 503 and response.json()["error"] == "service_unavailable"
    assert not Record.objects.filter(org=org).exists()
    assert not UsageCounter.objects.filter(org=org, signatures_used__gt=0).exists()


def test_an_unreachable_authority_is_a_503_too(key_client, org, settings):
    settings.TSA_URL = f"http://127.0.0.1:{free_port()}/"
    generator, seed = factories.make_client_generator(org=org)
    response = key_client(org).post("/v1/records", factories.record_body(generator=generator, seed=seed),
                                    format="json")
    assert response.status_code == 503 and response.json()["error"] == "service_unavailable"
    assert not Record.objects.filter(org=org).exists()
