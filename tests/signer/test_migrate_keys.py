"""signer_migrate_keys on PostgreSQL while threads sign: every signature verifies with the key's unchanged public
key, records signed before verify as they did, --dry-run changes nothing, a second run moves nothing; into
SoftHSMv2, a run killed between an import and its commit resumes without a second key in the token."""

import io
import os
import threading
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection, connections

from core.sealing import sealed_key_id
from generators.certificates import generator_c2pa_credentials
from generators.models import GeneratorCertificate, GeneratorKey
from record_format import crypto
from signer.signing import signature_of
from tests import factories
from tests.key_rings import NEW_ONLY, OLD_SECRET, ROTATED
from tests.media import photo_bytes

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor != "postgresql", reason="needs PostgreSQL row locks and a shared database"),
]
ROOT = Path(__file__).resolve().parents[2]
GENERATORS = 3


@pytest.fixture(autouse=True)
def _web_ring(settings):
    settings.KEY_ENCRYPTION_KEY = OLD_SECRET  # the ring the web process had when the keys were sealed
    settings.REDIS_URL = ""


@pytest.fixture
def hybrid_keys(growth_org):
    """Hybrid server-managed generators with their certificates issued: per generator, a sealed ML-DSA-65
    seed and a sealed ES256 key."""
    keys = []
    for n in range(GENERATORS):
        generator = factories.make_generator(org=growth_org, name=f"hybrid {n}", formats=["image"],
                                             c2pa_signing="hybrid")
        key = generator.keys.get()
        generator_c2pa_credentials(key, private_key=False)
        keys.append(key)
    return keys


def _es256_public_key(key: GeneratorKey) -> ec.EllipticCurvePublicKey:
    der = GeneratorCertificate.objects.get(pk=key.pk).es256_certificate
    return x509.load_der_x509_certificate(bytes(der)).public_key()


class Signers:
    """Threads that sign records (ML-DSA-65) and C2PA claims (ES256) with each key, loaded afresh from the
    database for every signature as a request would, and check each with the key's public key of before."""

    def __init__(self, keys: list[GeneratorKey]):
        self.checks = {key.pk: (bytes(key.public_key), _es256_public_key(key)) for key in keys}
        self.org_id = str(keys[0].generator.org_id)
        self.signed, self.failures = 0, []
        self._stop, self._lock = threading.Event(), threading.Lock()
        self._threads = [threading.Thread(target=self._run, args=(key.pk,), name=f"signer {key.pk}")
                         for key in keys]
        self._first = {thread.name: threading.Event() for thread in self._threads}

    def __enter__(self) -> "Signers":
        for thread in self._threads:
            thread.start()
        for thread in self._threads:  # each has signed once before the command starts, and signs on
            while not self._first[thread.name].wait(timeout=1):
                assert thread.is_alive(), self.failures
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=300)

    def _run(self, key_pk) -> None:
        try:
            while not self._stop.is_set():
                self._sign_both(GeneratorKey.objects.select_related("generator").get(pk=key_pk))
                self._first[threading.current_thread().name].set()
        except Exception as error:  # reported by the test
            with self._lock:
                self.failures.append(repr(error))
        finally:
            connections.close_all()

    def _sign_both(self, key: GeneratorKey) -> None:
        ml_dsa_public, es256_public = self.checks[key.pk]
        message = os.urandom(64)
        record = signature_of(key=key, org_id=self.org_id, purpose="record", algorithm="ml-dsa-65", message=message)
        claim = signature_of(key=key, org_id=self.org_id, purpose="c2pa-claim", algorithm="es256", message=message)
        if not crypto.verify(ml_dsa_public, message, record):
            raise AssertionError("an ML-DSA-65 signature does not verify with the key's public key")
        try:
            es256_public.verify(encode_dss_signature(int.from_bytes(claim[:32], "big"),
                                                     int.from_bytes(claim[32:], "big")),
                                message, ec.ECDSA(hashes.SHA256()))
        except InvalidSignature:
            raise AssertionError("an ES256 signature does not verify with the certificate's public key") from None
        with self._lock:
            self.signed += 2


def _sign_photo(key_client, org, key: GeneratorKey) -> bytes:
    response = key_client(org).post("/v1/sign", {"content": io.BytesIO(photo_bytes("astronaut", "jpeg")),
                                                 "model": "m", "generator_id": str(key.generator_id), "c2pa": "true"},
                                    format="multipart")
    assert response.status_code == 201, response.content[:300]
    return response.content


def _verified(api_client, signed: bytes) -> dict:
    response = api_client.post("/v1/verify", {"content": io.BytesIO(signed)}, format="multipart")
    assert response.status_code == 200, response.content[:300]
    result = response.json()
    assert (result["authentic"], result["signals"]["signature_valid"]) == (True, True), result
    return result


def _run(*args: str) -> str:
    output = io.StringIO()
    call_command("signer_migrate_keys", *args, stdout=output)
    return output.getvalue()


def _sealed_ids() -> list[str]:
    blobs = [*GeneratorKey.objects.values_list("encrypted_private_key", flat=True),
             *GeneratorCertificate.objects.values_list("encrypted_es256_private_key", flat=True)]
    return sorted(sealed_key_id(bytes(blob)) for blob in blobs if blob is not None)


def test_resealing_under_the_signers_own_id_while_threads_sign(settings, growth_org, hybrid_keys, key_client,
                                                                api_client):
    factories.make_user(org=growth_org, role="owner")
    signed_before = _sign_photo(key_client, growth_org, hybrid_keys[0])
    verified_before = _verified(api_client, signed_before)
    settings.KEY_ENCRYPTION_KEY = ROTATED  # the signer's ring: its own id first, the web's old one after
    blobs = sorted(map(bytes, GeneratorKey.objects.values_list("encrypted_private_key", flat=True)))

    dry = _run("--to", "sealed", "--dry-run")
    assert f"generator keys (ml-dsa-65): {GENERATORS} would move, 0 already there (sealed)" in dry
    assert f"C2PA ES256 keys (es256): {GENERATORS} would move" in dry
    assert "summary: dry run, nothing changed" in dry
    assert sorted(map(bytes, GeneratorKey.objects.values_list("encrypted_private_key", flat=True))) == blobs

    with Signers(hybrid_keys) as signers:
        moved = _run("--to", "sealed", "--batch-size", "1")
    assert signers.failures == [] and signers.signed > 0
    assert f"summary: {2 * GENERATORS} moved, 0 already there (sealed), 0 left sealed, 0 failed" in moved
    assert _sealed_ids() == ["k2"] * 2 * GENERATORS

    again = _run("--to", "sealed")
    assert f"summary: nothing moved: 0 moved, {2 * GENERATORS} already there (sealed)" in again

    settings.KEY_ENCRYPTION_KEY = NEW_ONLY  # the web process's id dropped from the signer's ring
    assert _verified(api_client, signed_before) == verified_before
    _verified(api_client, _sign_photo(key_client, growth_org, hybrid_keys[0]))


def test_a_key_sealed_under_an_id_the_signer_lacks_is_reported_failed(settings, hybrid_keys):
    settings.KEY_ENCRYPTION_KEY = NEW_ONLY  # OLD_SECRET, which sealed them, is not in this ring
    output = io.StringIO()
    with pytest.raises(CommandError, match="could not be moved"):
        call_command("signer_migrate_keys", "--to", "sealed", "--generator", str(hybrid_keys[0].generator_id),
                     stdout=output)
    assert "summary: nothing moved: 0 moved, 0 already there (sealed), 0 left sealed, 2 failed" in output.getvalue()


def test_an_unknown_backend_is_refused():
    with pytest.raises(CommandError, match="no key backend 'nowhere'"):
        call_command("signer_migrate_keys", "--to", "nowhere", stdout=io.StringIO())
