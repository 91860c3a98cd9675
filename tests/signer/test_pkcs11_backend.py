"""The PKCS#11 backend against a real SoftHSMv2 token (softhsm2 2.6.1 here): keys made and kept inside
the token, signatures that verify with pyca cryptography, private keys that cannot be read out, keys
that outlive the backend and the process, token errors without the PIN, and concurrent signing."""

import os
import struct
import subprocess
import sys
import threading
from pathlib import Path

import pkcs11
import pytest
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature
from pkcs11 import Attribute, KeyType, Mechanism, ObjectClass
from pkcs11.attributes import AttributeMapper

from signer.backends.base import BackendError, UnsupportedAlgorithm
from signer.backends.pkcs11 import Pkcs11Backend, key_pair_request
from tests.purity import assert_imports_without_django

SOFTHSM_ALGORITHMS = ("es256", "ed25519")


def _verify(algorithm: str, public_key: bytes, signature: bytes, message: bytes) -> None:
    """Raises InvalidSignature unless `signature` is `algorithm`'s signature of `message`."""
    if algorithm == "es256":
        assert len(signature) == 64  # r || s, 32 bytes each, as COSE wants
        key = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), public_key)
        r, s = int.from_bytes(signature[:32], "big"), int.from_bytes(signature[32:], "big")
        key.verify(encode_dss_signature(r, s), message, ec.ECDSA(hashes.SHA256()))
    else:
        Ed25519PublicKey.from_public_bytes(public_key).verify(signature, message)


def _raw_session(token):
    """A session of this process on the test token, outside the backend (it shares the backend's login)."""
    return pkcs11.lib(token.module_path).get_token(token_label=token.label).open()


def test_the_backend_imports_without_django():
    assert_imports_without_django(["signer.backends.pkcs11"])


def test_softhsm_offers_es256_and_ed25519_but_not_ml_dsa(pkcs11_backend):
    assert pkcs11_backend.algorithms() == frozenset(SOFTHSM_ALGORITHMS)


@pytest.mark.parametrize("algorithm", SOFTHSM_ALGORITHMS)
def test_a_key_made_in_the_token_signs_and_the_signature_verifies(pkcs11_backend, algorithm):
    new_key = pkcs11_backend.generate(algorithm, "generator gen-1")
    assert len(new_key.reference) == 32 and bytes.fromhex(new_key.reference)
    assert len(new_key.public_key) == {"es256": 65, "ed25519": 32}[algorithm]

    signature = pkcs11_backend.sign(new_key.reference, algorithm, b"the claim")

    _verify(algorithm, new_key.public_key, signature, b"the claim")
    with pytest.raises(InvalidSignature):
        _verify(algorithm, new_key.public_key, signature, b"another claim")
    assert pkcs11_backend.public_key(new_key.reference, algorithm) == new_key.public_key


@pytest.mark.parametrize("algorithm", SOFTHSM_ALGORITHMS)
def test_the_private_key_cannot_be_read_out_of_the_token(pkcs11_backend, softhsm_token, algorithm):
    new_key = pkcs11_backend.generate(algorithm, "sealed")
    session = _raw_session(softhsm_token)
    try:
        private = session.get_key(object_class=ObjectClass.PRIVATE_KEY, id=bytes.fromhex(new_key.reference))
        assert private[Attribute.SENSITIVE] is True
        assert private[Attribute.EXTRACTABLE] is False
        assert private[Attribute.NEVER_EXTRACTABLE] is True and private[Attribute.TOKEN] is True
        assert private[Attribute.LABEL] == "sealed"
        with pytest.raises(pkcs11.exceptions.AttributeSensitive):  # the token's CKR_ATTRIBUTE_SENSITIVE
            private[Attribute.VALUE]
    finally:
        session.close()


def test_keys_outlive_the_backend_that_made_them(softhsm_token):
    first = Pkcs11Backend(softhsm_token.module_path, softhsm_token.label, softhsm_token.pin)
    made = {algorithm: first.generate(algorithm, "kept") for algorithm in SOFTHSM_ALGORITHMS}
    first.close()  # its sessions closed and the token logged out

    second = Pkcs11Backend(softhsm_token.module_path, softhsm_token.label, softhsm_token.pin)
    try:
        for algorithm, new_key in made.items():
            _verify(algorithm, new_key.public_key, second.sign(new_key.reference, algorithm, b"later"), b"later")
    finally:
        second.close()


def test_keys_outlive_the_process_that_made_them(pkcs11_backend, softhsm_token):
    new_key = pkcs11_backend.generate("ed25519", "kept across processes")
    program = (
        "import sys; from signer.backends.pkcs11 import Pkcs11Backend\n"
        "backend = Pkcs11Backend(*sys.argv[1:4])\n"
        "sys.stdout.write(backend.sign(sys.argv[4], 'ed25519', b'elsewhere').hex()); backend.close()\n"
    )
    arguments = [softhsm_token.module_path, softhsm_token.label, softhsm_token.pin, new_key.reference]
    environment = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    done = subprocess.run([sys.executable, "-c", program, *arguments], env=environment, capture_output=True,
                          text=True, check=True)
    _verify("ed25519", new_key.public_key, bytes.fromhex(done.stdout), b"elsewhere")


def test_ml_dsa_is_refused_by_a_token_without_its_mechanisms(pkcs11_backend):
    # SoftHSM 2.6.1 implements PKCS#11 2.40: it has no ML-DSA, so the 3.2 path cannot run here.
    assert "ml-dsa-65" not in pkcs11_backend.algorithms()
    with pytest.raises(UnsupportedAlgorithm, match="CKM_ML_DSA_KEY_PAIR_GEN"):
        pkcs11_backend.generate("ml-dsa-65", "pq")
    with pytest.raises(UnsupportedAlgorithm, match="CKM_ML_DSA"):
        pkcs11_backend.sign("00" * 16, "ml-dsa-65", b"m")


def test_the_ml_dsa_request_carries_the_pkcs11_3_2_numbers():
    # No token here offers ML-DSA (SoftHSM 2.6.1 has none), so this checks what the ML-DSA path would
    # send to C_GenerateKeyPair against the OASIS 3.2 header (published/3-02/pkcs11t.h), not a token.
    request = key_pair_request("ml-dsa-65", "pq key", b"\x01" * 16)

    assert request.mechanism == 0x1C  # CKM_ML_DSA_KEY_PAIR_GEN
    assert request.key_type == 0x4A  # CKK_ML_DSA
    assert request.public_template[0x61D] == 0x02  # CKA_PARAMETER_SET = CKP_ML_DSA_65
    assert request.public_template[Attribute.KEY_TYPE] == 0x4A
    assert 0x61D not in request.private_template  # 3.2: the set is given on the public key only
    assert request.private_template[Attribute.SENSITIVE] is True
    assert request.private_template[Attribute.EXTRACTABLE] is False
    assert request.private_template[Attribute.TOKEN] is True and request.private_template[Attribute.SIGN] is True
    assert request.private_template[Attribute.ID] == request.public_template[Attribute.ID] == b"\x01" * 16
    # python-pkcs11 sends CKA_PARAMETER_SET as a CK_ULONG and names the same numbers.
    assert AttributeMapper().pack_attribute(Attribute(0x61D), 0x02) == struct.pack("L", 2)
    assert (Mechanism(0x1C), Mechanism(0x1D), KeyType(0x4A)) == (
        Mechanism.ML_DSA_KEY_PAIR_GEN, Mechanism.ML_DSA, KeyType.ML_DSA)


def test_es256_and_ed25519_requests_name_their_curves():
    assert key_pair_request("es256", "l", b"i").public_template[Attribute.EC_PARAMS] == bytes.fromhex(
        "06082a8648ce3d030107")  # OID 1.2.840.10045.3.1.7, prime256v1
    assert key_pair_request("ed25519", "l", b"i").public_template[Attribute.EC_PARAMS] == bytes.fromhex(
        "06032b6570")  # OID 1.3.101.112, id-Ed25519


def test_a_wrong_pin_is_refused_without_the_pin_in_the_message(softhsm_token):
    with pytest.raises(BackendError, match="CKR_PIN_INCORRECT") as refused:
        Pkcs11Backend(softhsm_token.module_path, softhsm_token.label, "0000-wrong")
    assert "0000-wrong" not in str(refused.value) and softhsm_token.pin not in str(refused.value)


def test_a_wrong_pin_is_refused_while_another_backend_holds_the_login(pkcs11_backend, softhsm_token):
    with pytest.raises(BackendError, match="CKR_PIN_INCORRECT") as refused:
        Pkcs11Backend(softhsm_token.module_path, softhsm_token.label, "0000-wrong")
    assert "0000-wrong" not in str(refused.value)
    assert pkcs11_backend.algorithms()  # the held login is untouched


def test_an_unknown_token_is_a_backend_error(softhsm_token):
    with pytest.raises(BackendError, match="no single PKCS#11 token"):
        Pkcs11Backend(softhsm_token.module_path, "no-such-token", softhsm_token.pin)


@pytest.mark.parametrize("reference", ["00" * 16, "not-hex", ""])
def test_an_unknown_reference_is_a_backend_error(pkcs11_backend, reference):
    with pytest.raises(BackendError):
        pkcs11_backend.sign(reference, "es256", b"m")
    with pytest.raises(BackendError):
        pkcs11_backend.public_key(reference, "ed25519")


def test_a_key_is_not_found_under_another_algorithm(pkcs11_backend):
    new_key = pkcs11_backend.generate("ed25519", "ed")
    with pytest.raises(BackendError, match="no key"):
        pkcs11_backend.sign(new_key.reference, "es256", b"m")


def test_a_closed_backend_refuses_to_sign(softhsm_token):
    backend = Pkcs11Backend(softhsm_token.module_path, softhsm_token.label, softhsm_token.pin)
    new_key = backend.generate("es256", "closing")
    backend.close()
    backend.close()  # closing twice is harmless
    with pytest.raises(BackendError, match="closed"):
        backend.sign(new_key.reference, "es256", b"m")


def test_a_session_the_token_ended_is_dropped_and_the_next_signature_opens_another(softhsm_token):
    backend = Pkcs11Backend(softhsm_token.module_path, softhsm_token.label, softhsm_token.pin, sessions=1)
    try:
        key = backend.generate("es256", "ended session")
        backend.sign(key.reference, "es256", b"the key's handle found and kept")
        (pooled,) = backend._opened
        pooled.session.close()  # C_CloseSession under the pool: as a token restart or a device reset leaves it
        with pytest.raises(BackendError, match="CKR_SESSION_HANDLE_INVALID"):
            backend.sign(key.reference, "es256", b"on the ended session")
        assert backend._opened == []  # not given back
        signature = backend.sign(key.reference, "es256", b"on a new one")
        _verify("es256", key.public_key, signature, b"on a new one")
        assert len(backend._opened) == 1 and backend._opened[0] is not pooled
    finally:
        backend.close()


def test_a_thread_waiting_for_the_only_session_gets_a_new_one_when_it_is_dropped(softhsm_token):
    backend = Pkcs11Backend(softhsm_token.module_path, softhsm_token.label, softhsm_token.pin, sessions=1)
    try:
        key = backend.generate("ed25519", "waiting")
        (pooled,) = backend._opened
        taken = backend._take_session()  # this thread holds the pool's only session
        assert taken is pooled
        signatures = []
        waiter = threading.Thread(target=lambda: signatures.append(backend.sign(key.reference, "ed25519", b"m")))
        waiter.start()
        waiter.join(timeout=0.5)
        assert waiter.is_alive()  # waiting for a session to come back
        pooled.session.close()
        backend._drop(taken)  # what a call on it that found it ended does
        waiter.join(timeout=30)
        assert not waiter.is_alive() and len(signatures) == 1
        _verify("ed25519", key.public_key, signatures[0], b"m")
    finally:
        backend.close()


def test_eight_threads_signing_concurrently_all_get_valid_signatures(pkcs11_backend):
    keys = {algorithm: pkcs11_backend.generate(algorithm, "busy") for algorithm in SOFTHSM_ALGORITHMS}
    results, failures = [], []

    def sign_many(thread_number: int) -> None:
        algorithm = SOFTHSM_ALGORITHMS[thread_number % 2]
        for count in range(50):
            message = f"thread {thread_number} message {count}".encode()
            try:
                results.append((algorithm, message, pkcs11_backend.sign(keys[algorithm].reference, algorithm,
                                                                        message)))
            except BackendError as error:
                failures.append(error)

    threads = [threading.Thread(target=sign_many, args=(number,)) for number in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert failures == [] and len(results) == 400
    for algorithm, message, signature in results:
        _verify(algorithm, keys[algorithm].public_key, signature, message)


def test_a_signer_whose_key_backend_cannot_make_generator_keys_refuses_to_start(softhsm_token, tmp_path):
    """SIGNER_KEY_BACKEND=pkcs11 on a token without ML-DSA (SoftHSMv2 2.6.1): registrations would all fail,
    so the signer says why at start instead of listening."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    env = {**os.environ, "DEBUG": "true", "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
           "SIGNER_KEY_BACKEND": "pkcs11", "SIGNER_PKCS11_MODULE": softhsm_token.module_path,
           "SIGNER_PKCS11_TOKEN": softhsm_token.label, "SIGNER_PKCS11_PIN": softhsm_token.pin,
           "SOFTHSM2_CONF": str(softhsm_token.configuration), "DJANGO_SETTINGS_MODULE": "config.settings"}
    started = subprocess.run([sys.executable, "manage.py", "signer", "--socket", str(tmp_path / "s.sock")],
                             cwd=Path(__file__).resolve().parents[2], env=env, capture_output=True, text=True,
                             timeout=300)
    assert started.returncode != 0
    assert "offers ed25519, es256 but not ml-dsa-65" in started.stderr
    unconfigured = subprocess.run([sys.executable, "manage.py", "signer", "--socket", str(tmp_path / "s.sock")],
                                  cwd=Path(__file__).resolve().parents[2], capture_output=True, text=True, timeout=300,
                                  env={**env, "SIGNER_KEY_BACKEND": "aws-kms"})
    assert unconfigured.returncode != 0 and "'aws-kms', which is not configured here" in unconfigured.stderr
