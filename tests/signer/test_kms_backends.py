"""The AWS KMS and Cloud KMS key backends, checked against each service's published model (no live account is
reachable here): every request they build fits the model and matches what the SDK itself would send, answers
made in the model's shapes (with real signatures) parse, SigV4 equals botocore's, and real HTTP round trips
through the emulators in tests/kms_emulators.py (which check the model and the signature on every request)
make keys whose signatures verify."""

import base64
import hashlib
import json
import re
from datetime import UTC, datetime
from urllib.parse import parse_qs, urlsplit

import botocore.auth
import httplib2
import pytest
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519
from cryptography.hazmat.primitives.asymmetric.mldsa import MLDSA65PrivateKey, MLDSA65PublicKey
from cryptography.hazmat.primitives.asymmetric.utils import Prehashed, encode_dss_signature
from dilithium_py.ml_dsa import ML_DSA_65
from googleapiclient.discovery import build_from_document

from signer.backends import aws_kms, gcp_kms, kms_encodings
from signer.backends.aws_kms import AwsCredentials, AwsKmsBackend, AwsKmsError
from signer.backends.base import ALGORITHMS, BackendError, UnsupportedAlgorithm
from signer.backends.gcp_kms import GcpKmsBackend, GcpKmsError, IntegrityCheckFailed
from tests import kms_models
from tests.kms_emulators import AwsKmsEmulator, CloudKmsEmulator, crc32c_bitwise
from tests.purity import assert_imports_without_django

CREDENTIALS = AwsCredentials("AKIAEMULATOR0EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEMULATORKEY",
                             "FwoGZXIvYXdzEEMULATORSESSIONTOKEN")
KEY_ARN = "arn:aws:kms:eu-central-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab"
KEY_RING = "projects/provenance-prod/locations/europe-west1/keyRings/signer"
VERSION = f"{KEY_RING}/cryptoKeys/gen-1-0a1b2c3d4e5f/cryptoKeyVersions/1"
SMALL, LARGE = b"a record's canonical bytes", bytes(range(256)) * 40  # 26 and 10240 bytes
ML_DSA_65_OID_DER = bytes.fromhex("0609608648016503040312")  # 2.16.840.1.101.3.4.3.18


def _private_key(algorithm):
    return {"ml-dsa-65": MLDSA65PrivateKey.generate, "es256": lambda: ec.generate_private_key(ec.SECP256R1()),
            "ed25519": ed25519.Ed25519PrivateKey.generate}[algorithm]()


def _verify(algorithm, public_key, message, signature):
    """Raises InvalidSignature unless `signature` (the interface's encoding) verifies with pyca."""
    if algorithm == "ml-dsa-65":
        MLDSA65PublicKey.from_public_bytes(public_key).verify(signature, message)
    elif algorithm == "ed25519":
        ed25519.Ed25519PublicKey.from_public_bytes(public_key).verify(signature, message)
    else:
        key = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), public_key)
        r, s = int.from_bytes(signature[:32], "big"), int.from_bytes(signature[32:], "big")
        key.verify(encode_dss_signature(r, s), message, ec.ECDSA(hashes.SHA256()))


def _spki(private_key, encoding=serialization.Encoding.DER):
    return private_key.public_key().public_bytes(encoding, serialization.PublicFormat.SubjectPublicKeyInfo)


def _b64(data):
    return base64.b64encode(data).decode()


# --- What the models offer ------------------------------------------------------------------------------

def test_the_published_models_offer_every_value_the_backends_send():
    shapes = kms_models.aws_model()["shapes"]
    assert set(aws_kms.KEY_SPECS.values()) <= set(shapes["KeySpec"]["enum"])
    assert set(aws_kms.SIGNING_ALGORITHMS.values()) <= set(shapes["SigningAlgorithmSpec"]["enum"])
    assert {"RAW", "DIGEST", "EXTERNAL_MU"} <= set(shapes["MessageType"]["enum"])
    assert shapes["PlaintextType"]["max"] == aws_kms.RAW_MESSAGE_LIMIT  # SignRequest.Message
    sign_doc = re.sub(r"<[^>]+>", "", shapes["SignRequest"]["members"]["MessageType"]["documentation"])
    assert "ED25519_SHA_512 signing algorithm requires KMS MessageType:RAW" in sign_doc
    assert "EXTERNAL_MU the length of the Message value must be 64 bytes" in sign_doc
    assert "FIPS 204 Section 6.2" in sign_doc

    schemas = kms_models.discovery()["schemas"]
    algorithms = schemas["CryptoKeyVersionTemplate"]["properties"]["algorithm"]["enum"]
    assert set(gcp_kms.VERSION_ALGORITHMS.values()) <= set(algorithms)
    assert "ASYMMETRIC_SIGN" in schemas["CryptoKey"]["properties"]["purpose"]["enum"]
    methods = kms_models.gcp_methods()
    formats = methods["cloudkms.projects.locations.keyRings.cryptoKeys.cryptoKeyVersions.getPublicKey"]
    assert "NIST_PQC" in formats["parameters"]["publicKeyFormat"]["enum"]
    assert "This field is required for PQC algorithms" in formats["parameters"]["publicKeyFormat"]["description"]
    assert ("CryptoKey.purpose and CryptoKey.version_template.algorithm are required"
            in methods[kms_models.CREATE_METHOD]["description"])  # what kms_models.CREATE_REQUIRES encodes


def test_the_model_checks_refuse_what_the_models_do_not_allow():
    good = aws_kms.sign_params(KEY_ARN, "ml-dsa-65", SMALL)
    kms_models.check_aws_input("Sign", good)
    for bad in ({**good, "SigningAlgorithm": "ML_DSA_SHAKE_128"}, {**good, "Context": "x"},
                {**good, "Message": _b64(b"m" * 4097)}, {k: v for k, v in good.items() if k != "KeyId"},
                {**good, "Message": "not base64!"}):
        with pytest.raises(kms_models.ModelViolation):
            kms_models.check_aws_input("Sign", bad)
    body = gcp_kms.create_body("ml-dsa-65")
    kms_models.check_gcp_request("POST", f"/v1/{KEY_RING}/cryptoKeys", {"cryptoKeyId": ["k1"]}, body)
    for path, query, bad_body in (
            (f"/v1/{KEY_RING}/cryptoKeys", {}, body),  # cryptoKeyId is "Required."
            (f"/v1/{KEY_RING}/cryptoKeys", {"cryptoKeyId": ["k1"], "keyId": ["k1"]}, body),
            (f"/v1/{KEY_RING}/cryptoKeys", {"cryptoKeyId": ["k1"]}, {**body, "name": "output only"}),
            (f"/v1/{KEY_RING}/cryptoKeys", {"cryptoKeyId": ["k1"]}, {"purpose": "ASYMMETRIC_SIGN"}),
            (f"/v1/{KEY_RING}/cryptoKeys", {"cryptoKeyId": ["k1"]},
             {**body, "versionTemplate": {"algorithm": "PQ_SIGN_ML_DSA_66"}}),
            (f"/v1/{KEY_RING}/keys", {}, body)):
        with pytest.raises(kms_models.ModelViolation):
            kms_models.check_gcp_request("POST", path, query, bad_body)


# --- AWS KMS: requests, answers, SigV4 ------------------------------------------------------------------

@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_every_aws_request_fits_the_model_and_serializes_as_botocore_does(algorithm):
    kms_models.check_aws_input("CreateKey", aws_kms.create_key_params(algorithm, "generator gen_1 key 2"))
    kms_models.check_aws_input("GetPublicKey", {"KeyId": KEY_ARN})
    kms_models.check_aws_input("Sign", aws_kms.sign_params(KEY_ARN, algorithm, SMALL))
    if algorithm == "ml-dsa-65":
        kms_models.check_aws_input("Sign", aws_kms.external_mu_sign_params(KEY_ARN, b"\x01" * 64))


def test_aws_message_types_follow_the_sign_documentation():
    assert aws_kms.sign_params(KEY_ARN, "ml-dsa-65", SMALL)["MessageType"] == "RAW"
    assert aws_kms.sign_params(KEY_ARN, "ed25519", SMALL)["MessageType"] == "RAW"
    digest = aws_kms.sign_params(KEY_ARN, "es256", LARGE)
    assert digest["MessageType"] == "DIGEST" and base64.b64decode(digest["Message"]) == hashlib.sha256(LARGE).digest()
    with pytest.raises(BackendError, match="1 to 4096 bytes"):
        aws_kms.sign_params(KEY_ARN, "ed25519", LARGE)


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_aws_answers_in_the_models_shapes_parse_into_the_interfaces_encodings(algorithm):
    private_key = _private_key(algorithm)
    public_answer = {"KeyId": KEY_ARN, "PublicKey": _b64(_spki(private_key)), "KeySpec": aws_kms.KEY_SPECS[algorithm],
                     "KeyUsage": "SIGN_VERIFY", "SigningAlgorithms": [aws_kms.SIGNING_ALGORITHMS[algorithm]]}
    kms_models.check_aws_output("GetPublicKey", public_answer)
    public_key = aws_kms.public_key_from_answer(public_answer, algorithm)
    signature = (private_key.sign(SMALL, ec.ECDSA(hashes.SHA256())) if algorithm == "es256"
                 else private_key.sign(SMALL))
    sign_answer = {"KeyId": KEY_ARN, "Signature": _b64(signature),
                   "SigningAlgorithm": aws_kms.SIGNING_ALGORITHMS[algorithm]}
    kms_models.check_aws_output("Sign", sign_answer)
    _verify(algorithm, public_key, SMALL, aws_kms.signature_from_answer(sign_answer, algorithm))
    assert len(public_key) == {"ml-dsa-65": 1952, "es256": 65, "ed25519": 32}[algorithm]


def test_an_ml_dsa_65_public_key_is_read_from_its_oid_and_another_key_type_is_refused():
    der = _spki(MLDSA65PrivateKey.generate())
    assert der[6:17] == ML_DSA_65_OID_DER and len(der) == 22 + 1952
    assert len(kms_encodings.public_key_from_der(der, "ml-dsa-65")) == 1952
    for algorithm, wrong in (("ml-dsa-65", _spki(ec.generate_private_key(ec.SECP256R1()))),
                             ("es256", _spki(ec.generate_private_key(ec.SECP384R1()))), ("ed25519", der)):
        with pytest.raises(BackendError, match="not " + algorithm):
            kms_encodings.public_key_from_der(wrong, algorithm)
    answer = {"PublicKey": _b64(der), "KeySpec": "ML_DSA_87"}
    with pytest.raises(BackendError, match="ML_DSA_87"):
        aws_kms.public_key_from_answer(answer, "ml-dsa-65")


@pytest.mark.parametrize("token", [None, CREDENTIALS.session_token])
@pytest.mark.parametrize("endpoint", ["https://kms.eu-central-1.amazonaws.com/", "http://127.0.0.1:8443/"])
def test_our_sigv4_authorization_equals_botocores(monkeypatch, token, endpoint):
    credentials = AwsCredentials(CREDENTIALS.access_key_id, CREDENTIALS.secret_access_key, token)
    at = datetime(2026, 11, 27, 14, 5, 9, tzinfo=UTC)
    body = json.dumps(aws_kms.sign_params(KEY_ARN, "ml-dsa-65", SMALL)).encode()
    host = urlsplit(endpoint).netloc.removesuffix(":443")
    headers = {"Host": host, "Content-Type": aws_kms.CONTENT_TYPE, "X-Amz-Target": "TrentService.Sign"}
    ours = aws_kms.sigv4_headers(method="POST", url=endpoint, headers=headers, body=body, credentials=credentials,
                                 region="eu-central-1", service="kms", now=at)
    monkeypatch.setattr(botocore.auth, "get_current_datetime", lambda: at.replace(tzinfo=None))
    request = AWSRequest(method="POST", url=endpoint, data=body, headers=dict(headers))
    botocore.auth.SigV4Auth(Credentials(credentials.access_key_id, credentials.secret_access_key, token), "kms",
                            "eu-central-1").add_auth(request)
    assert ours["Authorization"] == request.headers["Authorization"]
    assert ours["X-Amz-Date"] == request.headers["X-Amz-Date"] == "20261127T140509Z"
    assert ours.get("X-Amz-Security-Token") == request.headers.get("X-Amz-Security-Token") == token
    changed = aws_kms.sigv4_headers(method="POST", url=endpoint, headers=headers, body=body + b" ",
                                    credentials=credentials, region="eu-central-1", service="kms", now=at)
    assert changed["Authorization"] != ours["Authorization"]


# --- ML-DSA external mu ---------------------------------------------------------------------------------

def test_external_mu_is_fips_204s_message_representative():
    """Checked three ways: dilithium-py's own mu for the empty context, and pyca's ML-DSA signing our mu
    (sign_mu) giving a signature that verifies as a pure ML-DSA-65 signature over the whole message, with
    pyca and with dilithium-py; the mu of another key's public key does not verify."""
    private_key = MLDSA65PrivateKey.generate()
    public_key = private_key.public_key().public_bytes_raw()
    mu = kms_encodings.ml_dsa_external_mu(public_key, LARGE)
    assert len(mu) == 64 and mu == ML_DSA_65.prehash_external_mu(public_key, LARGE, ctx=b"")
    signature = private_key.sign_mu(mu)
    private_key.public_key().verify(signature, LARGE)
    assert ML_DSA_65.verify(public_key, LARGE, signature)
    other = kms_encodings.ml_dsa_external_mu(MLDSA65PrivateKey.generate().public_key().public_bytes_raw(), LARGE)
    assert not ML_DSA_65.verify(public_key, LARGE, private_key.sign_mu(other))


# --- CRC32C ---------------------------------------------------------------------------------------------

RFC_3720_B4 = [  # (data, CRC32C): RFC 3720 appendix B.4, and the common "123456789" check value
    (bytes(32), 0x8A9136AA), (b"\xff" * 32, 0x62A8AB43), (bytes(range(32)), 0x46DD794E),
    (bytes(range(31, -1, -1)), 0x113FDB5C),
    (bytes.fromhex("01c00000000000000000000000000000140000000000040000000014000000182800000000000000"
                   "0200000000000000"), 0xD9963A56),  # the iSCSI SCSI Read (10) command PDU
    (b"123456789", 0xE3069283), (b"", 0),
]


@pytest.mark.parametrize(("data", "expected"), RFC_3720_B4)
def test_crc32c_matches_the_known_vectors(data, expected):
    assert gcp_kms.crc32c(data) == expected == crc32c_bitwise(data)


# --- Cloud KMS: requests, answers -----------------------------------------------------------------------

def _sdk_request(method_id, **arguments):
    """The request google-api-python-client itself builds from the discovery document (never sent)."""
    service = build_from_document(kms_models.discovery(), http=httplib2.Http())
    resource = service.projects().locations().keyRings().cryptoKeys()
    if "cryptoKeyVersions" in method_id:
        resource = resource.cryptoKeyVersions()
    return getattr(resource, method_id.rsplit(".", 1)[-1])(**arguments)


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_every_cloud_kms_request_fits_the_discovery_document(algorithm):
    body = gcp_kms.create_body(algorithm, "HSM")
    key_id = gcp_kms.crypto_key_id("generator gen_1 / key #2 — Ünïcode")
    assert kms_models.check_gcp_request("POST", f"/v1/{KEY_RING}/cryptoKeys", {"cryptoKeyId": [key_id]}, body)[0] \
        == kms_models.CREATE_METHOD
    sign = gcp_kms.sign_body(algorithm, LARGE)
    kms_models.check_gcp_request("POST", f"/v1/{VERSION}:asymmetricSign", {}, sign)
    kms_models.check_gcp_request("GET", f"/v1/{VERSION}", {}, None)
    query = {"publicKeyFormat": ["NIST_PQC"]} if algorithm == "ml-dsa-65" else {}
    kms_models.check_gcp_request("GET", f"/v1/{VERSION}/publicKey", query, None)
    assert ("digest" in sign) == (algorithm == "es256")


def test_a_crypto_key_id_keeps_the_label_readable_and_never_repeats():
    first, second = gcp_kms.crypto_key_id("gen_1 key 2"), gcp_kms.crypto_key_id("gen_1 key 2")
    assert first.startswith("gen_1-key-2-") and first != second
    assert len(gcp_kms.crypto_key_id("x" * 500)) <= 63 and gcp_kms.crypto_key_id("///").startswith("key-")


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_cloud_kms_answers_in_the_documents_shapes_parse_into_the_interfaces_encodings(algorithm):
    private_key = _private_key(algorithm)
    answer = {"name": VERSION, "algorithm": gcp_kms.VERSION_ALGORITHMS[algorithm], "protectionLevel": "HSM"}
    if algorithm == "ml-dsa-65":
        raw = private_key.public_key().public_bytes_raw()
        answer |= {"publicKeyFormat": "NIST_PQC", "publicKey": {"data": _b64(raw), "crc32cChecksum": str(
            crc32c_bitwise(raw))}}
    else:
        pem = _spki(private_key, serialization.Encoding.PEM)
        answer |= {"pem": pem.decode(), "pemCrc32c": str(crc32c_bitwise(pem))}
    kms_models.check_gcp_response("cloudkms.projects.locations.keyRings.cryptoKeys.cryptoKeyVersions.getPublicKey",
                                  answer)
    public_key = gcp_kms.public_key_from_answer(answer, algorithm)
    if algorithm == "es256":
        signature = private_key.sign(hashlib.sha256(SMALL).digest(), ec.ECDSA(Prehashed(hashes.SHA256())))
    else:
        signature = private_key.sign(SMALL)
    checked = "verifiedDigestCrc32c" if algorithm == "es256" else "verifiedDataCrc32c"
    signed = {"signature": _b64(signature), "signatureCrc32c": str(crc32c_bitwise(signature)), "name": VERSION,
              checked: True, "protectionLevel": "HSM"}
    kms_models.check_gcp_response(
        "cloudkms.projects.locations.keyRings.cryptoKeys.cryptoKeyVersions.asymmetricSign", signed)
    _verify(algorithm, public_key, SMALL, gcp_kms.signature_from_answer(signed, VERSION, algorithm))
    with pytest.raises(IntegrityCheckFailed):
        gcp_kms.signature_from_answer({**signed, "signatureCrc32c": str(crc32c_bitwise(signature) ^ 1)}, VERSION,
                                      algorithm)
    with pytest.raises(IntegrityCheckFailed):
        gcp_kms.signature_from_answer({**signed, checked: False}, VERSION, algorithm)
    with pytest.raises(BackendError, match="another key version"):
        gcp_kms.signature_from_answer(signed, VERSION.replace("/1", "/2"), algorithm)


# --- Round trips over HTTP through the emulators --------------------------------------------------------

@pytest.fixture
def aws():
    secrets = (CREDENTIALS.access_key_id, CREDENTIALS.secret_access_key, CREDENTIALS.session_token)
    with AwsKmsEmulator(*secrets) as emulator:
        backend = AwsKmsBackend(region=emulator.region, credentials=CREDENTIALS, endpoint_url=emulator.url, timeout=5)
        yield emulator, backend
        backend.close()
    assert emulator.violations == []


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_aws_kms_keys_are_made_read_and_sign_through_the_emulator(aws, algorithm):
    emulator, backend = aws
    new_key = backend.generate(algorithm, "generator gen_1 key 1")
    assert new_key.reference == emulator.keys[new_key.reference].metadata["Arn"]
    assert backend.public_key(new_key.reference, algorithm) == new_key.public_key
    messages = (SMALL, LARGE, b"") if algorithm != "ed25519" else (SMALL,)
    for message in messages:
        _verify(algorithm, new_key.public_key, message, backend.sign(new_key.reference, algorithm, message))
    signs = [exchange.body for exchange in emulator.exchanges if exchange.operation == "Sign"]
    expected = {"ml-dsa-65": ["RAW", "EXTERNAL_MU", "EXTERNAL_MU"], "es256": ["DIGEST"] * 3, "ed25519": ["RAW"]}
    assert [body["MessageType"] for body in signs] == expected[algorithm]
    assert all(exchange.status == 200 for exchange in emulator.exchanges)
    assert emulator.exchanges[0].body == aws_kms.create_key_params(algorithm, "generator gen_1 key 1")


def test_a_new_aws_key_not_yet_visible_is_read_again(aws):
    emulator, backend = aws
    emulator.new_key_unseen_reads = 1
    new_key = backend.generate("es256", "gen")
    assert [(exchange.operation, exchange.status) for exchange in emulator.exchanges] == [
        ("CreateKey", 200), ("GetPublicKey", 400), ("GetPublicKey", 200)]
    assert len(new_key.public_key) == 65


def test_aws_errors_name_the_error_type_and_never_the_credentials(aws):
    emulator, backend = aws
    with pytest.raises(AwsKmsError) as missing:
        backend.sign(KEY_ARN, "ml-dsa-65", SMALL)
    assert missing.value.error_type == "NotFoundException" and "NotFoundException" in str(missing.value)
    key = backend.generate("ml-dsa-65", "gen")
    with pytest.raises(AwsKmsError, match="InvalidKeyUsageException"):
        backend.sign(key.reference, "ed25519", SMALL)
    wrong_secret = AwsCredentials(CREDENTIALS.access_key_id, "not-the-secret", CREDENTIALS.session_token)
    intruder = AwsKmsBackend(region=emulator.region, credentials=wrong_secret, endpoint_url=emulator.url)
    with pytest.raises(AwsKmsError) as refused:
        intruder.sign(key.reference, "ml-dsa-65", SMALL)
    # The emulator, like AWS, echoes the canonical request (and with it the session token) in this message.
    assert refused.value.error_type == "InvalidSignatureException"
    assert "[redacted]" in str(refused.value)
    for secret in (*vars(CREDENTIALS).values(), "not-the-secret"):
        assert secret not in str(refused.value) and secret not in repr(refused.value)
    assert "not-the-secret" not in repr(wrong_secret) and CREDENTIALS.session_token not in repr(CREDENTIALS)
    stranger = AwsKmsBackend(region=emulator.region, endpoint_url=emulator.url,
                             credentials=AwsCredentials("AKIASTRANGER", "secret"))
    with pytest.raises(AwsKmsError, match="UnrecognizedClientException"):
        stranger.public_key(key.reference, "ml-dsa-65")


def test_an_unreachable_aws_endpoint_is_a_backend_error():
    with AwsKmsEmulator("a", "b") as emulator:
        url = emulator.url
    backend = AwsKmsBackend(region="eu-central-1", credentials=CREDENTIALS, endpoint_url=url, timeout=2)
    with pytest.raises(BackendError, match="no answer"):
        backend.public_key(KEY_ARN, "es256")


@pytest.fixture
def gcp():
    with CloudKmsEmulator() as emulator:
        backend = GcpKmsBackend(key_ring=KEY_RING, token_provider=lambda: emulator.token, base_url=emulator.url,
                                timeout=5, poll_interval=0.01)
        yield emulator, backend
        backend.close()
    assert emulator.violations == []


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_cloud_kms_keys_are_made_read_and_sign_through_the_emulator(gcp, algorithm):
    emulator, backend = gcp
    new_key = backend.generate(algorithm, "generator gen_1 key 1")
    assert new_key.reference.startswith(f"{KEY_RING}/cryptoKeys/generator-gen_1-key-1-")
    assert new_key.reference.endswith("/cryptoKeyVersions/1")
    assert backend.public_key(new_key.reference, algorithm) == new_key.public_key
    for message in (SMALL, LARGE):
        _verify(algorithm, new_key.public_key, message, backend.sign(new_key.reference, algorithm, message))
    methods = [exchange.operation.rsplit(".", 1)[-1] for exchange in emulator.exchanges]
    assert methods == ["create", "get", "get", "get", "getPublicKey", "getPublicKey", "asymmetricSign",
                       "asymmetricSign"]  # version 1 is PENDING_GENERATION for two reads
    assert all(exchange.status == 200 for exchange in emulator.exchanges)


def test_cloud_kms_requests_are_the_ones_the_google_sdk_builds(gcp):
    emulator, backend = gcp
    key = backend.generate("ml-dsa-65", "gen")
    backend.sign(key.reference, "ml-dsa-65", SMALL)
    for exchange in emulator.exchanges:
        arguments = {name: values[0] for name, values in exchange.query.items()}
        if exchange.body is not None:
            arguments["body"] = exchange.body
        path = urlsplit(exchange.path).path
        if exchange.operation == kms_models.CREATE_METHOD:
            arguments["parent"] = KEY_RING
        else:
            arguments["name"] = path.removeprefix("/v1/").removesuffix(":asymmetricSign").removesuffix("/publicKey")
        sdk = _sdk_request(exchange.operation, **arguments)
        sdk_url = urlsplit(sdk.uri)
        assert (sdk.method, sdk_url.path) == (exchange.http_method, path)
        assert {k: v for k, v in parse_qs(sdk_url.query).items() if k != "alt"} == exchange.query
        assert (json.loads(sdk.body) if sdk.body else None) == exchange.body


def test_a_cloud_kms_answer_failing_its_checksum_is_retried_then_refused(gcp):
    emulator, backend = gcp
    key = backend.generate("ed25519", "gen")
    emulator.corrupt_signatures = 1
    _verify("ed25519", key.public_key, SMALL, backend.sign(key.reference, "ed25519", SMALL))
    emulator.corrupt_signatures = 3
    with pytest.raises(IntegrityCheckFailed):
        backend.sign(key.reference, "ed25519", SMALL)
    assert [e.operation for e in emulator.exchanges].count(
        "cloudkms.projects.locations.keyRings.cryptoKeys.cryptoKeyVersions.asymmetricSign") == 5


def test_cloud_kms_errors_name_the_status_and_never_the_token(gcp):
    emulator, backend = gcp
    with pytest.raises(GcpKmsError) as missing:
        backend.sign(VERSION, "ml-dsa-65", SMALL)
    assert missing.value.status == "NOT_FOUND" and "NOT_FOUND" in str(missing.value)
    intruder = GcpKmsBackend(key_ring=KEY_RING, token_provider=lambda: "ya29.stolen-or-stale", base_url=emulator.url)
    with pytest.raises(GcpKmsError) as refused:
        intruder.generate("es256", "gen")
    assert refused.value.status == "UNAUTHENTICATED" and "ya29" not in str(refused.value)
    with pytest.raises(BackendError, match="key version's name"):
        backend.sign(f"{KEY_RING}/cryptoKeys/k/cryptoKeyVersions/1/../../x", "es256", SMALL)
    with pytest.raises(BackendError, match="empty message"):
        backend.sign(VERSION, "ed25519", b"")


def test_the_metadata_server_token_is_fetched_once_and_reused(gcp):
    emulator, _ = gcp
    backend = GcpKmsBackend(key_ring=KEY_RING, base_url=emulator.url, poll_interval=0.01,
                            token_provider=gcp_kms.MetadataServerToken(url=emulator.metadata_token_url))
    key = backend.generate("es256", "gen")
    backend.sign(key.reference, "es256", SMALL)
    assert emulator.token_requests == 1
    with pytest.raises(BackendError, match="metadata server"):
        gcp_kms.MetadataServerToken(url=emulator.url + "/computeMetadata/v1/missing")()


def test_a_token_file_is_read_on_every_call(gcp, tmp_path):
    emulator, _ = gcp
    token_file = tmp_path / "token"
    token_file.write_text("stale\n")
    backend = GcpKmsBackend(key_ring=KEY_RING, base_url=emulator.url, poll_interval=0.01,
                            token_provider=gcp_kms.TokenFile(str(token_file)))
    with pytest.raises(GcpKmsError, match="UNAUTHENTICATED"):
        backend.generate("ed25519", "gen")
    token_file.write_text(emulator.token + "\n")
    assert len(backend.generate("ed25519", "gen").public_key) == 32
    token_file.write_text("")
    with pytest.raises(BackendError, match="empty"):
        backend.generate("ed25519", "gen")


# --- The interface --------------------------------------------------------------------------------------

def test_both_backends_refuse_algorithms_they_do_not_offer_and_stay_pure():
    aws = AwsKmsBackend(region="eu-central-1", credentials=CREDENTIALS)
    gcp = GcpKmsBackend(key_ring=KEY_RING, token_provider=lambda: "t")
    for backend in (aws, gcp):
        assert backend.algorithms() == frozenset(ALGORITHMS)
        with pytest.raises(UnsupportedAlgorithm):
            backend.generate("rsa-2048", "gen")
    assert (aws.name, gcp.name) == ("aws-kms", "gcp-kms")
    with pytest.raises(ValueError, match="keyRings"):
        GcpKmsBackend(key_ring="projects/p/keyRings/r", token_provider=lambda: "t")
    assert_imports_without_django(["signer.backends.aws_kms", "signer.backends.gcp_kms"])
