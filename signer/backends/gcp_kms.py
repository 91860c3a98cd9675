"""Google Cloud KMS as a key backend: keys made and used inside Cloud KMS, reached over its REST API (v1).

Pure: no Django, no Google SDK (requests and the standard library). What each call sends follows Cloud KMS's
published discovery document (`cloudkms.v1.json`; tests/signer/test_kms_backends.py checks every request and
response against it):
- generate: cryptoKeys.create in the configured key ring (purpose ASYMMETRIC_SIGN, versionTemplate.algorithm
  PQ_SIGN_ML_DSA_65, EC_SIGN_P256_SHA256 or EC_SIGN_ED25519; the id derived from the label), then
  cryptoKeyVersions.get until version 1 is ENABLED (it may start PENDING_GENERATION); the reference is that
  version's name, `.../cryptoKeys/<id>/cryptoKeyVersions/1`.
- sign: cryptoKeyVersions.asymmetricSign with the message itself (`data`) for ML-DSA-65 and Ed25519, its
  SHA-256 (`digest.sha256`) for ES256, each with its CRC32C; the answer is checked as Google asks
  (verified*Crc32c, signatureCrc32c, the version's name) and retried a few times when it fails the check.
- public_key: cryptoKeyVersions.getPublicKey, publicKeyFormat NIST_PQC for ML-DSA-65 (the raw key), and the
  default PEM for the others.
Access tokens come from a callable: MetadataServerToken (a VM's or GKE workload's service account) or
TokenFile (a token another process keeps fresh in a file).
"""

from __future__ import annotations

import base64
import hashlib
import re
import secrets
import threading
import time
from collections.abc import Callable
from urllib.parse import quote

import requests

from signer.backends import kms_encodings
from signer.backends.base import ALGORITHMS, BackendError, KeyBackend, NewKey, UnsupportedAlgorithm

DEFAULT_BASE_URL = "https://cloudkms.googleapis.com"
VERSION_ALGORITHMS = {"ml-dsa-65": "PQ_SIGN_ML_DSA_65", "es256": "EC_SIGN_P256_SHA256", "ed25519": "EC_SIGN_ED25519"}
_KEY_RING = re.compile(r"projects/[^/]+/locations/[^/]+/keyRings/[^/]+")
_VERSION = re.compile(r"projects/[^/]+/locations/[^/]+/keyRings/[^/]+/cryptoKeys/[^/]+/cryptoKeyVersions/[^/]+")
_KEY_ID_LABEL_CHARS = 50  # ids are [a-zA-Z0-9_-]{1,63}: the label's part, a dash and 12 random hex digits
_SIGN_ATTEMPTS = 3  # Google: on a checksum mismatch, discard the answer and retry a limited number of times
_ERROR_MESSAGE_CHARS = 300
METADATA_TOKEN_URL = "http://metadata.google.internal/computeMetadata/v1/instance/service-accounts/default/token"


def _crc32c_table() -> tuple[int, ...]:
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1  # Castagnoli, reflected
        table.append(crc)
    return tuple(table)


_CRC32C_TABLE = _crc32c_table()


def crc32c(data: bytes) -> int:
    """CRC-32C (Castagnoli, RFC 3720 B.4), the checksum Cloud KMS puts beside data it receives and sends."""
    crc = 0xFFFFFFFF
    table = _CRC32C_TABLE
    for byte in data:
        crc = table[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


class GcpKmsError(BackendError):
    """Cloud KMS answered with an error: `status` is Google's canonical code (NOT_FOUND, PERMISSION_DENIED...)."""

    def __init__(self, method: str, status: str, http_status: int, message: str):
        super().__init__(f"Cloud KMS {method} failed: {status} (HTTP {http_status}){': ' + message if message else ''}")
        self.status = status


class IntegrityCheckFailed(BackendError):
    """An answer failed the CRC32C checks Cloud KMS asks clients to make."""


class MetadataServerToken:
    """Access tokens of the service account attached to the VM, Cloud Run service or GKE workload, from the
    metadata server, kept until a minute before they expire."""

    def __init__(self, url: str = METADATA_TOKEN_URL, timeout: float = 5.0):
        self._url, self._timeout = url, timeout
        self._token, self._valid_until = "", 0.0
        self._lock = threading.Lock()

    def __call__(self) -> str:
        with self._lock:
            if time.monotonic() >= self._valid_until:
                self._token, lifetime = self._fetch()
                self._valid_until = time.monotonic() + max(lifetime - 60, 0)
            return self._token

    def _fetch(self) -> tuple[str, float]:
        try:
            response = requests.get(self._url, headers={"Metadata-Flavor": "Google"}, timeout=self._timeout)
            response.raise_for_status()
            answer = response.json()
            return str(answer["access_token"]), float(answer.get("expires_in", 0))
        except (requests.RequestException, ValueError, KeyError, TypeError) as error:
            raise BackendError(f"no access token from the metadata server ({type(error).__name__})") from None


class TokenFile:
    """A bearer token that another process keeps fresh in a file (a sidecar running `gcloud auth
    print-access-token`, a workload identity helper); read on every call, so a rewritten file counts at once."""

    def __init__(self, path: str):
        self._path = path

    def __call__(self) -> str:
        try:
            with open(self._path, encoding="utf-8") as token_file:
                token = token_file.read().strip()
        except (OSError, UnicodeDecodeError) as error:
            raise BackendError(f"cannot read the access token file ({type(error).__name__})") from None
        if not token:
            raise BackendError("the access token file is empty")
        return token


def crypto_key_id(label: str) -> str:
    """A new cryptoKeyId ([a-zA-Z0-9_-]{1,63}) that shows the label and never collides with an earlier key."""
    readable = re.sub(r"[^a-zA-Z0-9_-]+", "-", label).strip("-")[:_KEY_ID_LABEL_CHARS] or "key"
    return f"{readable}-{secrets.token_hex(6)}"


def create_body(algorithm: str, protection_level: str | None = None) -> dict:
    """cryptoKeys.create's CryptoKey for a signing key of `algorithm`."""
    template = {"algorithm": VERSION_ALGORITHMS[algorithm]}
    if protection_level:
        template["protectionLevel"] = protection_level
    return {"purpose": "ASYMMETRIC_SIGN", "versionTemplate": template}


def sign_body(algorithm: str, message: bytes) -> dict:
    """asymmetricSign's request: the message for ML-DSA and Ed25519 (pure modes take data), the digest for
    ECDSA, each with its CRC32C (int64 travels as a JSON string)."""
    if algorithm == "es256":
        digest = hashlib.sha256(message).digest()
        return {"digest": {"sha256": _b64(digest)}, "digestCrc32c": str(crc32c(digest))}
    if not message:
        # proto3 cannot tell empty bytes from none: Cloud KMS would see neither data nor digest.
        raise BackendError(f"Cloud KMS cannot sign an empty message with {algorithm}")
    return {"data": _b64(message), "dataCrc32c": str(crc32c(message))}


def signature_from_answer(answer: dict, reference: str, algorithm: str) -> bytes:
    """The interface's signature in asymmetricSign's answer, after Google's integrity checks.
    Raises IntegrityCheckFailed, BackendError."""
    verified = "verifiedDigestCrc32c" if algorithm == "es256" else "verifiedDataCrc32c"
    if answer.get(verified) is not True:
        raise IntegrityCheckFailed(f"Cloud KMS did not confirm the request's checksum ({verified})")
    if answer.get("name") != reference:
        raise BackendError("Cloud KMS signed with another key version than the one asked for")
    signature = _checked_bytes(answer.get("signature"), answer.get("signatureCrc32c"), "signature")
    if algorithm == "es256":
        return kms_encodings.ecdsa_der_to_raw(signature)
    expected = kms_encodings.ML_DSA_65_SIGNATURE_BYTES if algorithm == "ml-dsa-65" else 64
    if len(signature) != expected:
        raise BackendError(f"Cloud KMS answered a {len(signature)}-byte {algorithm} signature")
    return signature


def public_key_from_answer(answer: dict, algorithm: str) -> bytes:
    """The raw public key in getPublicKey's answer (NIST_PQC raw bytes or PEM), its checksum checked."""
    if answer.get("algorithm") != VERSION_ALGORITHMS[algorithm]:
        raise BackendError(f"Cloud KMS key version is {answer.get('algorithm')}, not {VERSION_ALGORITHMS[algorithm]}")
    if algorithm == "ml-dsa-65":
        wrapped = answer.get("publicKey")
        wrapped = wrapped if isinstance(wrapped, dict) else {}
        raw = _checked_bytes(wrapped.get("data"), wrapped.get("crc32cChecksum"), "public key")
        if len(raw) != kms_encodings.ML_DSA_65_PUBLIC_KEY_BYTES:
            raise BackendError(f"Cloud KMS answered a {len(raw)}-byte ML-DSA-65 public key")
        return raw
    pem = str(answer.get("pem") or "").encode()
    if not pem:
        raise BackendError("Cloud KMS answered without a PEM public key")
    if _crc_field(answer.get("pemCrc32c")) != crc32c(pem):
        raise IntegrityCheckFailed("Cloud KMS public key fails its checksum")
    return kms_encodings.public_key_from_pem(pem, algorithm)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _checked_bytes(encoded: object, checksum: object, what: str) -> bytes:
    try:
        # proto3 JSON writes standard base64 and accepts the URL-safe alphabet too: read both.
        data = base64.b64decode(str(encoded or "").replace("-", "+").replace("_", "/"), validate=True)
    except ValueError:
        raise BackendError(f"Cloud KMS answered a {what} that is not base64") from None
    if not data:
        raise BackendError(f"Cloud KMS answered without a {what}")
    if _crc_field(checksum) != crc32c(data):
        raise IntegrityCheckFailed(f"Cloud KMS {what} fails its checksum")
    return data


def _crc_field(value: object) -> int | None:
    try:
        return int(value)  # int64 fields arrive as JSON strings
    except (TypeError, ValueError):
        return None


class GcpKmsBackend(KeyBackend):
    """Keys in one Cloud KMS key ring, one CryptoKey per generator key, signing inside Cloud KMS."""

    name = "gcp-kms"

    def __init__(self, *, key_ring: str, token_provider: Callable[[], str], base_url: str = DEFAULT_BASE_URL,
                 timeout: float = 10.0, protection_level: str | None = None, poll_interval: float = 0.5,
                 poll_attempts: int = 60):
        if not _KEY_RING.fullmatch(key_ring):
            raise ValueError("key_ring must be projects/P/locations/L/keyRings/R")
        self._key_ring, self._token_provider, self._timeout = key_ring, token_provider, timeout
        self._base_url = base_url.rstrip("/")
        self._protection_level = protection_level  # None: Cloud KMS's default (SOFTWARE); "HSM" asks for one
        self._poll_interval, self._poll_attempts = poll_interval, poll_attempts
        self._session = requests.Session()

    def algorithms(self) -> frozenset[str]:
        return frozenset(ALGORITHMS)

    def generate(self, algorithm: str, label: str) -> NewKey:
        _require_algorithm(algorithm)
        created = self.call("cryptoKeys.create", "POST", f"{self._key_ring}/cryptoKeys",
                            params={"cryptoKeyId": crypto_key_id(label)},
                            body=create_body(algorithm, self._protection_level))
        key_name = str(created.get("name") or "")
        reference = f"{key_name}/cryptoKeyVersions/1"  # create makes version 1 with the key
        if not _VERSION.fullmatch(reference):
            raise BackendError("Cloud KMS cryptoKeys.create answered without the key's name")
        self._wait_until_enabled(reference)
        return NewKey(public_key=self.public_key(reference, algorithm), reference=reference)

    def sign(self, reference: str, algorithm: str, message: bytes) -> bytes:
        _require_algorithm(algorithm)
        _require_version_name(reference)
        body = sign_body(algorithm, message)
        for _ in range(_SIGN_ATTEMPTS - 1):
            try:
                return self._sign_once(reference, algorithm, body)
            except IntegrityCheckFailed:
                pass  # Google's advice: discard the answer and ask again, a limited number of times
        return self._sign_once(reference, algorithm, body)

    def public_key(self, reference: str, algorithm: str) -> bytes:
        _require_algorithm(algorithm)
        _require_version_name(reference)
        # NIST_PQC is required for post-quantum keys; the others answer PEM by default.
        params = {"publicKeyFormat": "NIST_PQC"} if algorithm == "ml-dsa-65" else None
        answer = self.call("cryptoKeyVersions.getPublicKey", "GET", f"{reference}/publicKey", params=params)
        return public_key_from_answer(answer, algorithm)

    def close(self) -> None:
        self._session.close()

    def call(self, method: str, http_method: str, path: str, *, params: dict | None = None,
             body: dict | None = None) -> dict:
        """One Cloud KMS method on `path` (a resource name and suffix under /v1): its JSON answer, or
        GcpKmsError / BackendError."""
        token = self._token_provider()
        url = f"{self._base_url}/v1/{quote(path, safe='/:')}"
        try:
            response = self._session.request(http_method, url, params=params, json=body, timeout=self._timeout,
                                             headers={"Authorization": f"Bearer {token}"})
        except requests.RequestException as error:
            raise BackendError(f"Cloud KMS {method}: no answer ({type(error).__name__})") from None
        answer = _json_object(response)
        if response.status_code >= 400:
            raise _error(method, response.status_code, answer, token)
        if answer is None:
            raise BackendError(f"Cloud KMS {method} answered something other than a JSON object")
        return answer

    def _sign_once(self, reference: str, algorithm: str, body: dict) -> bytes:
        answer = self.call("cryptoKeyVersions.asymmetricSign", "POST", f"{reference}:asymmetricSign", body=body)
        return signature_from_answer(answer, reference, algorithm)

    def _wait_until_enabled(self, reference: str) -> None:
        for _ in range(self._poll_attempts):
            state = self.call("cryptoKeyVersions.get", "GET", reference).get("state")
            if state == "ENABLED":
                return
            if state != "PENDING_GENERATION":
                raise BackendError(f"Cloud KMS key version is {state}, not ENABLED")
            time.sleep(self._poll_interval)
        raise BackendError("Cloud KMS key version is still PENDING_GENERATION")


def _json_object(response: requests.Response) -> dict | None:
    try:
        answer = response.json()
    except ValueError:
        return None
    return answer if isinstance(answer, dict) else None


def _error(method: str, http_status: int, answer: dict | None, token: str) -> GcpKmsError:
    # Google's error envelope: {"error": {"code": 404, "message": "...", "status": "NOT_FOUND"}}.
    error = (answer or {}).get("error")
    error = error if isinstance(error, dict) else {}
    message = str(error.get("message") or "")
    if token:
        message = message.replace(token, "[redacted]")
    message = message[:_ERROR_MESSAGE_CHARS]
    return GcpKmsError(method, str(error.get("status") or "UNKNOWN"), http_status, message)


def _require_algorithm(algorithm: str) -> None:
    if algorithm not in VERSION_ALGORITHMS:
        raise UnsupportedAlgorithm(f"Cloud KMS backend does not offer {algorithm!r}")


def _require_version_name(reference: str) -> None:
    if not _VERSION.fullmatch(reference):
        raise BackendError("a Cloud KMS reference is a key version's name (.../cryptoKeyVersions/N)")
