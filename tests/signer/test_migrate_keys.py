"""signer_migrate_keys on PostgreSQL while threads sign: every signature verifies with the key's unchanged public
key, records signed before verify as they did, --dry-run changes nothing, a second run moves nothing; into
SoftHSMv2, a run killed between an import and its commit resumes without a second key in the token."""

import io
import os
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection, connections

from core.sealing import sealed_key_id
from generators.certificates import generator_c2pa_credentials
from generators.models import CertificateAuthority, GeneratorCertificate, GeneratorKey
from record_format import crypto
from signer import counting
from signer.backends import registry
from signer.backends.base import UnsupportedAlgorithm
from signer.signing import signature_of
from tests import factories
from tests.key_rings import NEW_ONLY, OLD_SECRET, ROTATED
from tests.media import photo_bytes


def on_postgres(test):
    """PostgreSQL only: row locks, and a database the threads and the killed process share with the test."""
    for mark in (pytest.mark.postgres, pytest.mark.django_db(transaction=True),
                 pytest.mark.skipif(connection.vendor != "postgresql", reason="needs PostgreSQL")):
        test = mark(test)
    return test

ROOT = Path(__file__).resolve().parents[2]
GENERATORS = 3


@pytest.fixture
def _web_ring(settings):
    settings.KEY_ENCRYPTION_KEY = OLD_SECRET  # the ring the web process had when the keys were sealed
    settings.REDIS_URL = ""


@pytest.fixture
def hybrid_keys(growth_org, _web_ring):
    """Hybrid server-managed generators with their certificates issued: per generator, a sealed ML-DSA-65
    seed and a sealed ES256 key."""
    keys = []
    for n in range(GENERATORS):
        generator = factories.make_generator(org=growth_org, name=f"hybrid {n}", formats=["image"],
                                             c2pa_signing="hybrid")
        key = generator.keys.get()
        generator_c2pa_credentials(key, private_key=False)
        keys.append(key)
    yield keys
    counting.counts_flush()  # stored now: the flusher thread then holds no connection when the database goes


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
             *GeneratorCertificate.objects.values_list("encrypted_es256_private_key", flat=True),
             *CertificateAuthority.objects.values_list("encrypted_private_key", flat=True)]
    return sorted(sealed_key_id(bytes(blob)) for blob in blobs if blob is not None)


@on_postgres
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

    authorities = CertificateAuthority.objects.filter(encrypted_private_key__isnull=False).count()
    with Signers(hybrid_keys) as signers:
        moved = _run("--to", "sealed", "--batch-size", "1")
    assert signers.failures == [] and signers.signed > 0
    sealed = 2 * GENERATORS + authorities
    assert f"C2PA CA keys (es256 and ml-dsa-65): {authorities} moved" in moved and authorities >= 2
    assert f"summary: {sealed} moved, 0 already there (sealed), 0 left sealed, 0 failed" in moved
    assert _sealed_ids() == ["k2"] * sealed

    again = _run("--to", "sealed")
    assert f"summary: nothing moved: 0 moved, {sealed} already there (sealed)" in again

    settings.KEY_ENCRYPTION_KEY = NEW_ONLY  # the web process's id dropped from the signer's ring
    assert _verified(api_client, signed_before) == verified_before
    _verified(api_client, _sign_photo(key_client, growth_org, hybrid_keys[0]))


@on_postgres
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


@pytest.fixture
def token_backend(settings, softhsm_token):
    """The deployment's `pkcs11` backend on the SoftHSMv2 test token, as the signer's settings configure it."""
    settings.SIGNER_PKCS11_MODULE, settings.SIGNER_PKCS11_TOKEN = softhsm_token.module_path, softhsm_token.label
    settings.SIGNER_PKCS11_PIN = softhsm_token.pin
    yield registry.backend_named("pkcs11")
    registry.close_backends()


def _token_objects(backend, label: str) -> list[tuple[str, bytes]]:
    """(class, CKA_ID) of each object the token holds under `label`."""
    from pkcs11 import Attribute

    with backend._session() as pooled:
        return sorted((str(item[Attribute.CLASS]), bytes(item[Attribute.ID]))
                      for item in pooled.session.get_objects({Attribute.LABEL: label}))


def _es256_rows() -> list[tuple[str, str, bool]]:
    return sorted((backend, reference, blob is None) for backend, reference, blob in GeneratorCertificate.objects
                  .values_list("es256_key_backend", "es256_key_reference", "encrypted_es256_private_key"))


@on_postgres
def test_moving_es256_keys_into_softhsm_while_threads_sign(growth_org, hybrid_keys, token_backend, key_client,
                                                           api_client):
    factories.make_user(org=growth_org, role="owner")
    signed_before = _sign_photo(key_client, growth_org, hybrid_keys[0])
    verified_before = _verified(api_client, signed_before)

    dry = _run("--to", "pkcs11", "--dry-run")
    assert (f"generator keys (ml-dsa-65): 0 would move, 0 already there (pkcs11), {GENERATORS} left sealed "
            "(the backend cannot hold ml-dsa-65), 0 failed") in dry
    assert f"C2PA ES256 keys (es256): {GENERATORS} would move, 0 already there (pkcs11)" in dry
    assert _es256_rows() == [("sealed", "", False)] * GENERATORS

    with Signers(hybrid_keys) as signers:
        moved = _run("--to", "pkcs11", "--batch-size", "1")
    assert signers.failures == [] and signers.signed > 0
    assert f"summary: {GENERATORS} moved, 0 already there (pkcs11), {GENERATORS} left sealed" in moved
    for key in hybrid_keys:
        row = GeneratorCertificate.objects.get(pk=key.pk)
        assert (row.es256_key_backend, row.encrypted_es256_private_key) == ("pkcs11", None)
        assert token_backend.public_key(row.es256_key_reference, "es256") == _es256_public_key(key).public_bytes(
            Encoding.X962, PublicFormat.UncompressedPoint)
    assert GeneratorKey.objects.filter(key_backend="sealed", encrypted_private_key__isnull=False).count() == GENERATORS

    again = _run("--to", "pkcs11")
    assert f"summary: nothing moved: 0 moved, {GENERATORS} already there (pkcs11), {GENERATORS} left sealed" in again
    assert _verified(api_client, signed_before) == verified_before
    _verified(api_client, _sign_photo(key_client, growth_org, hybrid_keys[0]))


@on_postgres
def test_a_run_killed_between_an_import_and_its_commit_resumes_without_a_second_key(settings, hybrid_keys,
                                                                                   token_backend, softhsm_token):
    database = connection.settings_dict
    url = (f"postgres://{database['USER']}@{database['HOST'] or '127.0.0.1'}:{database['PORT'] or 5432}/"
           f"{database['NAME']}")
    env = {**os.environ, "DATABASE_URL": url, "DEBUG": "true", "SECRET_KEY": settings.SECRET_KEY,
           "KEY_ENCRYPTION_KEY": OLD_SECRET, "SIGNER_PKCS11_MODULE": softhsm_token.module_path,
           "SIGNER_PKCS11_TOKEN": softhsm_token.label, "SIGNER_PKCS11_PIN": softhsm_token.pin,
           "DJANGO_SETTINGS_MODULE": "config.settings", "PYTHONPATH": str(ROOT)}
    env.pop("REDIS_URL", None)
    process = subprocess.Popen([sys.executable, "manage.py", "signer_migrate_keys", "--to", "pkcs11",
                                "--pause-after-import"], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    try:
        lines = iter(process.stdout.readline, "")
        paused = next((line for line in lines if "pausing before the commit" in line), None)
        assert paused is not None, process.stderr.read()[-2000:]
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=60)
    label = re.match(r"imported (generator-certificate \S+);", paused).group(1)
    left_behind = _token_objects(token_backend, label)
    assert len(left_behind) == 2  # the public and private key objects, one CKA_ID
    assert _es256_rows() == [("sealed", "", False)] * GENERATORS  # its transaction never committed

    resumed = _run("--to", "pkcs11")
    assert f"summary: {GENERATORS} moved, 0 already there (pkcs11)" in resumed
    assert _token_objects(token_backend, label) == left_behind  # reused, no second key
    row = GeneratorCertificate.objects.get(pk=label.split()[1])
    assert bytes.fromhex(row.es256_key_reference) == left_behind[0][1]


def test_the_token_takes_an_es256_key_in_once_per_label(pkcs11_backend):
    from pkcs11 import Attribute, ObjectClass

    private_key = ec.generate_private_key(ec.SECP256R1())
    scalar = private_key.private_numbers().private_value.to_bytes(32, "big")
    first = pkcs11_backend.import_key("es256", scalar, "generator-certificate once")
    assert pkcs11_backend.import_key("es256", scalar, "generator-certificate once") == first
    assert first.public_key == private_key.public_key().public_bytes(Encoding.X962, PublicFormat.UncompressedPoint)
    signature = pkcs11_backend.sign(first.reference, "es256", b"claim")
    private_key.public_key().verify(encode_dss_signature(int.from_bytes(signature[:32], "big"),
                                                         int.from_bytes(signature[32:], "big")),
                                    b"claim", ec.ECDSA(hashes.SHA256()))
    with pkcs11_backend._session() as pooled:
        held = list(pooled.session.get_objects({Attribute.LABEL: "generator-certificate once"}))
        assert sorted(item[Attribute.CLASS] for item in held) == [ObjectClass.PUBLIC_KEY, ObjectClass.PRIVATE_KEY]
        private = next(item for item in held if item[Attribute.CLASS] == ObjectClass.PRIVATE_KEY)
        assert (private[Attribute.TOKEN], private[Attribute.SENSITIVE], private[Attribute.EXTRACTABLE]) == (
            True, True, False)


def test_the_token_takes_an_ed25519_key_in(pkcs11_backend):
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    private_key = Ed25519PrivateKey.generate()
    imported = pkcs11_backend.import_key("ed25519", private_key.private_bytes_raw(), "checkpoint key")
    assert imported.public_key == private_key.public_key().public_bytes_raw()
    private_key.public_key().verify(pkcs11_backend.sign(imported.reference, "ed25519", b"tree head"), b"tree head")


def test_a_token_without_ml_dsa_refuses_an_ml_dsa_seed(pkcs11_backend):
    seed, _ = crypto.generate_keypair()
    with pytest.raises(UnsupportedAlgorithm, match="CKM_ML_DSA"):
        pkcs11_backend.import_key("ml-dsa-65", seed, "generator-key refused")


def test_an_ml_dsa_seed_goes_in_as_the_3_2_seed_attribute_with_its_parameter_set():
    from pkcs11 import Attribute, ObjectClass

    from signer.backends.pkcs11 import CKA_PARAMETER_SET, CKA_SEED, CKK_ML_DSA, CKP_ML_DSA_65, key_import_request

    seed, public_key = crypto.generate_keypair()
    request = key_import_request("ml-dsa-65", seed, public_key, "generator-key x", b"\x01" * 16)
    assert request.private_template[CKA_SEED] == seed and Attribute.VALUE not in request.private_template
    assert request.public_template[Attribute.VALUE] == public_key
    for template, object_class in ((request.public_template, ObjectClass.PUBLIC_KEY),
                                   (request.private_template, ObjectClass.PRIVATE_KEY)):
        assert (template[Attribute.CLASS], template[Attribute.KEY_TYPE], template[CKA_PARAMETER_SET]) == (
            object_class, CKK_ML_DSA, CKP_ML_DSA_65)
    assert (request.private_template[Attribute.SENSITIVE], request.private_template[Attribute.EXTRACTABLE]) == (
        True, False)


@on_postgres
def test_a_certificate_issued_again_after_its_key_moved_signs_with_its_new_key(hybrid_keys, token_backend):
    from generators import certificates

    key = hybrid_keys[0]
    _run("--to", "pkcs11", "--generator", str(key.generator_id))
    stored = GeneratorCertificate.objects.get(pk=key.pk)
    assert stored.es256_key_backend == "pkcs11"
    certificates._issue_es256(stored, key, stored.es256_issuer)  # renewal: a new sealed key
    stored.refresh_from_db()
    assert (stored.es256_key_backend, stored.es256_key_reference) == ("sealed", "")
    renewed = _es256_public_key(key)
    org_id = str(key.generator.org_id)

    def signed_by_renewed_key() -> bool:
        signature = signature_of(key=key, org_id=org_id, purpose="c2pa-claim", algorithm="es256", message=b"claim")
        try:
            renewed.verify(encode_dss_signature(int.from_bytes(signature[:32], "big"),
                                                int.from_bytes(signature[32:], "big")), b"claim",
                           ec.ECDSA(hashes.SHA256()))
            return True
        except InvalidSignature:
            return False

    assert signed_by_renewed_key()
    moved = _run("--to", "pkcs11", "--generator", str(key.generator_id))
    assert "C2PA ES256 keys (es256): 1 moved, 0 already there (pkcs11)" in moved
    assert GeneratorCertificate.objects.get(pk=key.pk).encrypted_es256_private_key is None
    assert signed_by_renewed_key()
