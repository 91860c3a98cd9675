"""AWS KMS as a key backend: keys made and used inside KMS, reached over its JSON 1.1 API with SigV4.

Pure: no Django, no AWS SDK (requests and the standard library). What each call sends follows KMS's published
service model (botocore's `kms/2014-11-01/service-2.json`; tests/signer/test_kms_backends.py checks every
request and response against it):
- generate: CreateKey (KeySpec ML_DSA_65, ECC_NIST_P256 or ECC_NIST_EDWARDS25519; KeyUsage SIGN_VERIFY; the
  label as Description), then GetPublicKey; the reference is the key's ARN.
- sign: Sign. ML-DSA-65 (ML_DSA_SHAKE_256) sends the message itself (MessageType RAW) when it is 1 to 4096
  bytes, otherwise FIPS 204's 64-byte mu (MessageType EXTERNAL_MU), computed here from the public key;
  ES256 (ECDSA_SHA_256) sends the SHA-256 digest (MessageType DIGEST), so any size signs; Ed25519
  (ED25519_SHA_512) takes MessageType RAW only, so messages over 4096 bytes cannot be signed there.
- public_key: GetPublicKey, a DER SubjectPublicKeyInfo turned into the interface's raw key.
Errors come back as AwsKmsError naming AWS's error type, never with the credentials.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from urllib.parse import quote, urlsplit

import requests

from signer.backends import kms_encodings
from signer.backends.base import ALGORITHMS, BackendError, KeyBackend, NewKey, UnsupportedAlgorithm

SERVICE = "kms"
TARGET_PREFIX = "TrentService"  # the model's metadata.targetPrefix
CONTENT_TYPE = "application/x-amz-json-1.1"  # JSON protocol, metadata.jsonVersion 1.1
RAW_MESSAGE_LIMIT = 4096  # SignRequest.Message is 1 to 4096 bytes

KEY_SPECS = {"ml-dsa-65": "ML_DSA_65", "es256": "ECC_NIST_P256", "ed25519": "ECC_NIST_EDWARDS25519"}
SIGNING_ALGORITHMS = {"ml-dsa-65": "ML_DSA_SHAKE_256", "es256": "ECDSA_SHA_256", "ed25519": "ED25519_SHA_512"}
_SIGNATURE_BYTES = {"ml-dsa-65": kms_encodings.ML_DSA_65_SIGNATURE_BYTES, "ed25519": 64}

# KMS is eventually consistent: a key just made may be unknown to GetPublicKey for a moment.
_NEW_KEY_READ_ATTEMPTS = 5
_NEW_KEY_FIRST_WAIT_SECONDS = 0.2
_ERROR_MESSAGE_CHARS = 300


@dataclass(frozen=True)
class AwsCredentials:
    """An access key, and the session token of temporary credentials; never printed."""

    access_key_id: str
    secret_access_key: str = field(repr=False)
    session_token: str | None = field(default=None, repr=False)


class AwsKmsError(BackendError):
    """KMS answered with an error: `error_type` is AWS's name for it (NotFoundException, ...)."""

    def __init__(self, operation: str, error_type: str, status: int, message: str):
        super().__init__(f"AWS KMS {operation} failed: {error_type} (HTTP {status}){': ' + message if message else ''}")
        self.error_type = error_type


def sigv4_headers(*, method: str, url: str, headers: dict[str, str], body: bytes, credentials: AwsCredentials,
                  region: str, service: str, now: datetime) -> dict[str, str]:
    """`headers` plus X-Amz-Date, X-Amz-Security-Token (temporary credentials) and the SigV4 Authorization
    that signs all of them and the body. `headers` must hold Host."""
    stamp = now.astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")
    signed = {**headers, "X-Amz-Date": stamp}
    if credentials.session_token:
        signed["X-Amz-Security-Token"] = credentials.session_token
    canonical_headers = {name.lower(): " ".join(value.split()) for name, value in signed.items()}
    names = sorted(canonical_headers)
    parts = urlsplit(url)
    canonical_request = "\n".join([
        method.upper(), quote(parts.path or "/", safe="/~"), _canonical_query(parts.query),
        "".join(f"{name}:{canonical_headers[name]}\n" for name in names), ";".join(names),
        hashlib.sha256(body).hexdigest(),
    ])
    scope = f"{stamp[:8]}/{region}/{service}/aws4_request"
    string_to_sign = "\n".join(["AWS4-HMAC-SHA256", stamp, scope,
                                hashlib.sha256(canonical_request.encode()).hexdigest()])
    key = f"AWS4{credentials.secret_access_key}".encode()
    for part in (stamp[:8], region, service, "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    signature = hmac.new(key, string_to_sign.encode(), hashlib.sha256).hexdigest()
    signed["Authorization"] = (f"AWS4-HMAC-SHA256 Credential={credentials.access_key_id}/{scope}, "
                               f"SignedHeaders={';'.join(names)}, Signature={signature}")
    return signed


def _canonical_query(query: str) -> str:
    pairs = sorted(pair.partition("=")[::2] for pair in query.split("&") if pair)
    return "&".join(f"{key}={value}" for key, value in pairs)


def create_key_params(algorithm: str, label: str) -> dict:
    """CreateKey's input for a signing key of `algorithm`."""
    return {"KeySpec": KEY_SPECS[algorithm], "KeyUsage": "SIGN_VERIFY", "Description": label}


def sign_params(key_id: str, algorithm: str, message: bytes) -> dict:
    """Sign's input for `message`, or BackendError when KMS cannot sign it as the interface wants.
    (ML-DSA messages outside 1 to 4096 bytes go as mu: `external_mu_sign_params`.)"""
    params = {"KeyId": key_id, "SigningAlgorithm": SIGNING_ALGORITHMS[algorithm]}
    if algorithm == "es256":
        return {**params, "MessageType": "DIGEST", "Message": _b64(hashlib.sha256(message).digest())}
    if not fits_raw_message(message):
        raise BackendError(f"AWS KMS signs {algorithm} messages of 1 to {RAW_MESSAGE_LIMIT} bytes only "
                           f"(this one is {len(message)})")
    return {**params, "MessageType": "RAW", "Message": _b64(message)}


def external_mu_sign_params(key_id: str, mu: bytes) -> dict:
    """Sign's input for an ML-DSA-65 signature over a precomputed mu (kms_encodings.ml_dsa_external_mu)."""
    return {"KeyId": key_id, "SigningAlgorithm": SIGNING_ALGORITHMS["ml-dsa-65"], "MessageType": "EXTERNAL_MU",
            "Message": _b64(mu)}


def fits_raw_message(message: bytes) -> bool:
    return 1 <= len(message) <= RAW_MESSAGE_LIMIT


def public_key_from_answer(answer: dict, algorithm: str) -> bytes:
    """The raw public key in GetPublicKey's output. Raises BackendError."""
    if answer.get("KeySpec", KEY_SPECS[algorithm]) != KEY_SPECS[algorithm]:
        raise BackendError(f"AWS KMS key is {answer['KeySpec']}, not {KEY_SPECS[algorithm]}")
    return kms_encodings.public_key_from_der(_unb64(answer, "PublicKey"), algorithm)


def signature_from_answer(answer: dict, algorithm: str) -> bytes:
    """The interface's signature in Sign's output. Raises BackendError."""
    if answer.get("SigningAlgorithm", SIGNING_ALGORITHMS[algorithm]) != SIGNING_ALGORITHMS[algorithm]:
        raise BackendError(f"AWS KMS signed with {answer['SigningAlgorithm']}, not {SIGNING_ALGORITHMS[algorithm]}")
    signature = _unb64(answer, "Signature")
    if algorithm == "es256":
        return kms_encodings.ecdsa_der_to_raw(signature)
    if len(signature) != _SIGNATURE_BYTES[algorithm]:
        raise BackendError(f"AWS KMS answered a {len(signature)}-byte {algorithm} signature")
    return signature


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _unb64(answer: dict, member: str) -> bytes:
    try:
        return base64.b64decode(answer[member], validate=True)
    except (KeyError, TypeError, ValueError):
        raise BackendError(f"AWS KMS answered without a base64 {member}") from None


class AwsKmsBackend(KeyBackend):
    """Keys in AWS KMS, one KMS key per generator key, signing inside KMS."""

    name = "aws-kms"

    def __init__(self, *, region: str, credentials: AwsCredentials, endpoint_url: str | None = None,
                 timeout: float = 10.0):
        self._region, self._credentials, self._timeout = region, credentials, timeout
        # A VPC endpoint or a test server replaces the regional one.
        self._endpoint = endpoint_url or f"https://kms.{region}.amazonaws.com/"
        self._host = _host_header(self._endpoint)
        self._session = requests.Session()
        self._public_keys: dict[str, bytes] = {}  # ML-DSA mu needs the public key; it never changes

    def algorithms(self) -> frozenset[str]:
        return frozenset(ALGORITHMS)

    def generate(self, algorithm: str, label: str) -> NewKey:
        _require_algorithm(algorithm)
        created = self.call("CreateKey", create_key_params(algorithm, label))
        try:
            arn = created["KeyMetadata"]["Arn"]
        except (KeyError, TypeError):
            raise BackendError("AWS KMS CreateKey answered without KeyMetadata.Arn") from None
        return NewKey(public_key=self._new_key_public_key(arn, algorithm), reference=arn)

    def sign(self, reference: str, algorithm: str, message: bytes) -> bytes:
        _require_algorithm(algorithm)
        if algorithm == "ml-dsa-65" and not fits_raw_message(message):
            mu = kms_encodings.ml_dsa_external_mu(self._cached_public_key(reference, algorithm), message)
            params = external_mu_sign_params(reference, mu)
        else:
            params = sign_params(reference, algorithm, message)
        return signature_from_answer(self.call("Sign", params), algorithm)

    def public_key(self, reference: str, algorithm: str) -> bytes:
        _require_algorithm(algorithm)
        return public_key_from_answer(self.call("GetPublicKey", {"KeyId": reference}), algorithm)

    def close(self) -> None:
        self._session.close()

    def call(self, operation: str, params: dict) -> dict:
        """One KMS operation: its JSON output, or AwsKmsError / BackendError."""
        body = json.dumps(params).encode()
        headers = sigv4_headers(
            method="POST", url=self._endpoint, body=body, credentials=self._credentials, region=self._region,
            service=SERVICE, now=datetime.now(UTC),
            headers={"Host": self._host, "Content-Type": CONTENT_TYPE, "X-Amz-Target": f"{TARGET_PREFIX}.{operation}"})
        try:
            response = self._session.post(self._endpoint, data=body, headers=headers, timeout=self._timeout)
        except requests.RequestException as error:
            raise BackendError(f"AWS KMS {operation}: no answer from {self._host} ({type(error).__name__})") from None
        if response.status_code >= 400:
            raise self._error(operation, response)
        try:
            answer = response.json()
        except ValueError:
            answer = None
        if not isinstance(answer, dict):
            raise BackendError(f"AWS KMS {operation} answered something other than a JSON object")
        return answer

    def _new_key_public_key(self, arn: str, algorithm: str) -> bytes:
        wait = _NEW_KEY_FIRST_WAIT_SECONDS
        for _ in range(_NEW_KEY_READ_ATTEMPTS - 1):
            try:
                return self._cached_public_key(arn, algorithm)
            except AwsKmsError as error:
                if error.error_type != "NotFoundException":
                    raise
            time.sleep(wait)
            wait *= 2
        return self._cached_public_key(arn, algorithm)

    def _cached_public_key(self, reference: str, algorithm: str) -> bytes:
        if reference not in self._public_keys:
            self._public_keys[reference] = self.public_key(reference, algorithm)
        return self._public_keys[reference]

    def _error(self, operation: str, response: requests.Response) -> AwsKmsError:
        try:
            body = response.json()
        except ValueError:
            body = {}
        body = body if isinstance(body, dict) else {}
        # JSON 1.1 names the error in __type ("com.amazonaws.kms#NotFoundException" or bare), or in a header.
        raw_type = str(body.get("__type") or response.headers.get("x-amzn-ErrorType") or "UnknownError")
        error_type = raw_type.split(":")[0].rsplit("#", 1)[-1]
        message = str(body.get("message") or body.get("Message") or "")
        return AwsKmsError(operation, error_type, response.status_code, self._scrubbed(message))

    def _scrubbed(self, text: str) -> str:
        """AWS's message without anything of the credentials (a signature error may echo the access key)."""
        for secret in (self._credentials.secret_access_key, self._credentials.session_token,
                       self._credentials.access_key_id):
            if secret:
                text = text.replace(secret, "[redacted]")
        return text[:_ERROR_MESSAGE_CHARS]


def _require_algorithm(algorithm: str) -> None:
    if algorithm not in KEY_SPECS:
        raise UnsupportedAlgorithm(f"AWS KMS backend does not offer {algorithm!r}")


def _host_header(url: str) -> str:
    parts = urlsplit(url)
    default_port = {"https": 443, "http": 80}.get(parts.scheme)
    host = parts.hostname or ""
    host = f"[{host}]" if ":" in host else host  # an IPv6 literal keeps its brackets in Host
    return host if parts.port in (None, default_port) else f"{host}:{parts.port}"
