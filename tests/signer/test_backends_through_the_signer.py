"""Generator keys made and used inside a cloud KMS backend, end to end: a real `manage.py signer` process
configured with SIGNER_KEY_BACKEND (aws-kms or gcp-kms, each against its emulator in tests/kms_emulators.py,
which checks every request against the SDK's published service model), registration and rotation in this
process asking it for keys, records signed through it verifying with the key KMS holds. A rotation keeps
the generator in its backend; a generator registered before, with a sealed key, keeps signing from the
database: backends are per generator. PostgreSQL only: the signer must see the test's rows."""

import subprocess
from pathlib import Path

import pytest
from dilithium_py.ml_dsa import ML_DSA_65
from django.db import connection

from generators.services import generator_register, generator_rotate_key
from signer.signing import signature_of
from tests import factories
from tests.kms_emulators import AwsKmsEmulator, CloudKmsEmulator
from tests.signer.processes import signer_environment, start_signer

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor != "postgresql", reason="the signer process needs the test's database"),
]
ROOT = Path(__file__).resolve().parents[2]
SIGNER_SECRET = "signer-backends-secret-0123456789abcdef"


def _start_signer(settings, tmp_path, backend_env: dict[str, str]) -> subprocess.Popen:
    path = str(tmp_path / "signer.sock")
    process = start_signer(signer_environment(settings, SIGNER_SECRET=SIGNER_SECRET, **backend_env), path)
    settings.SIGNER_SOCKET, settings.SIGNER_SECRET = path, SIGNER_SECRET
    return process


def _signs_and_verifies(key, org) -> None:
    message = b"a record's signed payload"
    signature = signature_of(key=key, org_id=str(org.pk), purpose="record", algorithm="ml-dsa-65", message=message)
    assert ML_DSA_65.verify(bytes(key.public_key), message, signature)
    assert not ML_DSA_65.verify(bytes(key.public_key), message + b"!", signature)


@pytest.mark.parametrize("backend", ["aws-kms", "gcp-kms"])
def test_generator_keys_live_in_the_configured_kms_and_sign_there(backend, settings, tmp_path):
    org = factories.make_org(name=f"{backend} org")
    sealed_before = generator_register(org=org, name="before", public_key=None)  # in process, sealed
    if backend == "aws-kms":
        emulator = AwsKmsEmulator(access_key_id="AKIAEMULATOR000000", secret_access_key="emulator-secret-key")
        backend_env = {"SIGNER_AWS_KMS_REGION": emulator.region, "AWS_ACCESS_KEY_ID": emulator.access_key_id,
                       "AWS_SECRET_ACCESS_KEY": emulator.secret_access_key}
    else:
        emulator = CloudKmsEmulator()
        token_file = tmp_path / "token"
        token_file.write_text(emulator.token)
        backend_env = {"SIGNER_GCP_KMS_KEY_RING": "projects/p/locations/europe-west3/keyRings/svc",
                       "SIGNER_GCP_KMS_TOKEN_FILE": str(token_file)}
    with emulator:
        endpoint = {"aws-kms": "SIGNER_AWS_KMS_ENDPOINT", "gcp-kms": "SIGNER_GCP_KMS_ENDPOINT"}[backend]
        signer = _start_signer(settings, tmp_path, {**backend_env, endpoint: emulator.url,
                                                    "SIGNER_KEY_BACKEND": backend})
        try:
            generator = generator_register(org=org, name="in kms", public_key=None)
            key = generator.keys.get()
            assert (key.key_backend, key.encrypted_private_key) == (backend, None) and key.key_reference
            _signs_and_verifies(key, org)
            rotated = generator_rotate_key(generator=generator, public_key=None)
            assert rotated.key_backend == backend and rotated.key_reference != key.key_reference
            _signs_and_verifies(rotated, org)
            _signs_and_verifies(sealed_before.keys.get(), org)  # the older generator's key stays sealed
            assert sealed_before.keys.get().key_backend == "sealed"
        finally:
            signer.terminate()
            signer.wait(timeout=60)
        assert emulator.violations == []
        assert len(emulator.keys if backend == "aws-kms" else emulator.versions) == 2
