"""EMULATORS of AWS KMS and Google Cloud KMS, for the signer's KMS backends; they are not the services.

No live account is reachable here, so each emulator is a small real HTTP server on 127.0.0.1 that speaks its
service's wire protocol as the service's own published model describes it, and nothing more:
- AWS: botocore's `kms/2014-11-01/service-2.json` (JSON 1.1). Every request's SigV4 signature is recomputed
  with botocore's own signer (botocore.auth.SigV4Auth) and must match; every request body is checked against
  the operation's input shape (tests.kms_models) and must serialize identically through botocore's JSON
  serializer; every answer is checked against the output shape before it is sent.
- Google: google-api-python-client's `cloudkms.v1.json` discovery document. Every request must match one
  method's HTTP method, path template and parameter patterns, and its body the method's request schema;
  every answer is checked against the response schema. It also serves the metadata server's token route.
Keys are made with pyca cryptography inside the emulator and sign for real, so signatures verify. What an
emulator cannot tell: quotas, IAM and key policies, latency, which regions offer ML-DSA, or how the service
behaves where its documentation is silent (documented in docs/key-backends.md).
"""

from __future__ import annotations

import base64
import hmac
import json
import re
import threading
import time
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519
from cryptography.hazmat.primitives.asymmetric.mldsa import MLDSA65PrivateKey
from cryptography.hazmat.primitives.asymmetric.utils import Prehashed

from tests import kms_models


@dataclass
class Exchange:
    """One request as the emulator received it and what it answered."""

    operation: str
    http_method: str
    path: str
    body: dict | None
    query: dict
    status: int
    answer: dict


class _Server:
    """A threaded HTTP/1.1 server on an ephemeral port whose handler calls `respond`."""

    def __init__(self, respond):
        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self):
                self._answer()

            def do_POST(self):
                self._answer()

            def _answer(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                status, headers, payload = respond(self.command, self.path, self.headers, body)
                data = json.dumps(payload).encode()
                self.send_response(status)
                for name, value in {**headers, "Content-Length": str(len(data))}.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self._thread.start()

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()


# --- AWS KMS -------------------------------------------------------------------------------------------

_AWS_SIGNING = {"ML_DSA_65": ("ML_DSA_SHAKE_256",), "ECC_NIST_P256": ("ECDSA_SHA_256",),
                "ECC_NIST_EDWARDS25519": ("ED25519_SHA_512",)}
# Errors every AWS JSON service may answer, outside each operation's modelled list.
_AWS_COMMON_ERRORS = {"ValidationException", "InvalidSignatureException", "IncompleteSignatureException",
                      "UnrecognizedClientException", "UnknownOperationException", "SerializationException"}


@dataclass
class _AwsKey:
    spec: str
    private_key: object
    metadata: dict
    unseen_reads: int  # GetPublicKey answers NotFoundException this many times (eventual consistency)


@dataclass
class AwsKmsEmulator:
    """AWS KMS's Sign, CreateKey and GetPublicKey, for one account and region, with SigV4 checked."""

    access_key_id: str
    secret_access_key: str
    session_token: str | None = None
    region: str = "eu-central-1"
    account: str = "111122223333"
    new_key_unseen_reads: int = 0
    exchanges: list[Exchange] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)
    keys: dict[str, _AwsKey] = field(default_factory=dict)

    def __enter__(self) -> AwsKmsEmulator:
        self._server = _Server(self._respond)
        self.url = self._server.url + "/"
        return self

    def __exit__(self, *exc):
        self._server.stop()

    def _respond(self, method, path, headers, body):
        operation = str(headers.get("X-Amz-Target", "")).partition(".")[2] or "?"
        status, answer = self._handle(operation, method, path, headers, body)
        params = _json_or_none(body)
        self.exchanges.append(Exchange(operation, method, path, params, {}, status, answer))
        reply_headers = {"Content-Type": kms_models.AWS_CONTENT_TYPE, "x-amzn-RequestId": str(uuid.uuid4())}
        return status, reply_headers, answer

    def _handle(self, operation, method, path, headers, body):
        signature_error = self._signature_error(method, path, headers, body)
        if signature_error:
            return signature_error
        try:
            params = kms_models.check_aws_request(method, path, headers, body)
        except kms_models.ModelViolation as violation:
            self.violations.append(str(violation))
            return self._error(operation, 400, "ValidationException", str(violation))
        try:
            answer = getattr(self, f"_op_{operation}")(params)
        except _AwsFault as fault:
            return self._error(operation, fault.status, fault.error_type, fault.message)
        kms_models.check_aws_output(operation, answer)
        return 200, answer

    def _error(self, operation, status, error_type, message):
        modelled = {error["shape"] for error in kms_models.aws_model()["operations"][operation].get("errors", [])} \
            if operation in kms_models.aws_model()["operations"] else set()
        assert error_type in modelled | _AWS_COMMON_ERRORS, f"{error_type} is not an error {operation} answers"
        return status, {"__type": error_type, "message": message}

    def _signature_error(self, method, path, headers, body):
        """None when botocore's SigV4 signer, given the same request, credentials and time, signs the same."""
        match = re.fullmatch(r"AWS4-HMAC-SHA256 Credential=([^/]+)/(\d{8})/([^/]+)/kms/aws4_request, "
                             r"SignedHeaders=([a-z0-9;-]+), Signature=([0-9a-f]{64})",
                             str(headers.get("Authorization", "")))
        if not match:
            return 400, {"__type": "IncompleteSignatureException", "message": "Authorization header malformed"}
        access_key, date, region, signed_names, signature = match.groups()
        if access_key != self.access_key_id:
            return 400, {"__type": "UnrecognizedClientException",
                         "message": "The security token included in the request is invalid."}
        names = signed_names.split(";")
        stamp = str(headers.get("X-Amz-Date", ""))
        if region != self.region or not stamp.startswith(date) or not {"host", "x-amz-date"} <= set(names):
            return 400, {"__type": "IncompleteSignatureException", "message": "credential scope or headers wrong"}
        if self.session_token and (headers.get("X-Amz-Security-Token") != self.session_token
                                   or "x-amz-security-token" not in names):
            return 400, {"__type": "UnrecognizedClientException",
                         "message": "The security token included in the request is invalid."}
        request = AWSRequest(method=method, url=f"http://{headers['Host']}{path}", data=body,
                             headers={name: headers[name] for name in names if headers.get(name) is not None})
        request.context["timestamp"] = stamp
        signer = SigV4Auth(Credentials(self.access_key_id, self.secret_access_key, self.session_token), "kms",
                           self.region)
        canonical = signer.canonical_request(request)
        expected = signer.signature(signer.string_to_sign(request, canonical), request)
        if hmac.compare_digest(expected, signature):
            return None
        # AWS echoes the canonical request, security token header included, in this message.
        return 400, {"__type": "InvalidSignatureException",
                     "message": "The request signature we calculated does not match the signature you provided. "
                                f"The Canonical String for this request should have been\n'{canonical}'"}

    def _key(self, key_id: str) -> _AwsKey:
        key = self.keys.get(key_id) or next((k for k in self.keys.values() if k.metadata["KeyId"] == key_id), None)
        if key is None:
            raise _AwsFault(400, "NotFoundException", f"Key '{key_id}' does not exist")
        return key

    def _op_CreateKey(self, params):
        spec = params.get("KeySpec", "SYMMETRIC_DEFAULT")
        if spec not in _AWS_SIGNING or params.get("KeyUsage") != "SIGN_VERIFY":
            raise _AwsFault(400, "UnsupportedOperationException", f"the emulator makes no {spec} keys")
        private_key = {"ML_DSA_65": MLDSA65PrivateKey.generate, "ECC_NIST_P256": lambda: ec.generate_private_key(
            ec.SECP256R1()), "ECC_NIST_EDWARDS25519": ed25519.Ed25519PrivateKey.generate}[spec]()
        key_id = str(uuid.uuid4())
        metadata = {
            "AWSAccountId": self.account, "KeyId": key_id,
            "Arn": f"arn:aws:kms:{self.region}:{self.account}:key/{key_id}",
            "CreationDate": time.time(), "Enabled": True, "Description": params.get("Description", ""),
            "KeyUsage": "SIGN_VERIFY", "KeyState": "Enabled", "Origin": "AWS_KMS", "KeyManager": "CUSTOMER",
            "KeySpec": spec, "SigningAlgorithms": list(_AWS_SIGNING[spec]), "MultiRegion": False,
        }
        self.keys[metadata["Arn"]] = _AwsKey(spec, private_key, metadata, self.new_key_unseen_reads)
        return {"KeyMetadata": metadata}

    def _op_GetPublicKey(self, params):
        key = self._key(params["KeyId"])
        if key.unseen_reads:
            key.unseen_reads -= 1
            raise _AwsFault(400, "NotFoundException", "Key does not exist (yet)")
        der = key.private_key.public_key().public_bytes(serialization.Encoding.DER,
                                                        serialization.PublicFormat.SubjectPublicKeyInfo)
        return {"KeyId": key.metadata["Arn"], "PublicKey": _b64(der), "KeySpec": key.spec, "KeyUsage": "SIGN_VERIFY",
                "SigningAlgorithms": list(_AWS_SIGNING[key.spec])}

    def _op_Sign(self, params):
        key = self._key(params["KeyId"])
        algorithm, message_type = params["SigningAlgorithm"], params.get("MessageType", "RAW")
        if algorithm not in _AWS_SIGNING[key.spec]:
            raise _AwsFault(400, "InvalidKeyUsageException", f"{algorithm} is not valid for {key.spec}")
        message = base64.b64decode(params["Message"])
        signature = _aws_signature(key, algorithm, message_type, message)
        return {"KeyId": key.metadata["Arn"], "Signature": _b64(signature), "SigningAlgorithm": algorithm}


def _aws_signature(key: _AwsKey, algorithm: str, message_type: str, message: bytes) -> bytes:
    """What KMS signs for each message type, as the Sign documentation in the model states it."""
    if algorithm == "ML_DSA_SHAKE_256" and message_type == "RAW":
        return key.private_key.sign(message)
    if algorithm == "ML_DSA_SHAKE_256" and message_type == "EXTERNAL_MU":
        if len(message) != 64:
            raise _AwsFault(400, "ValidationException", "EXTERNAL_MU messages are 64 bytes")
        return key.private_key.sign_mu(message)
    if algorithm == "ECDSA_SHA_256" and message_type == "DIGEST":
        if len(message) != 32:
            raise _AwsFault(400, "ValidationException", "a DIGEST for ECDSA_SHA_256 is 32 bytes")
        return key.private_key.sign(message, ec.ECDSA(Prehashed(hashes.SHA256())))
    if algorithm == "ECDSA_SHA_256" and message_type == "RAW":
        return key.private_key.sign(message, ec.ECDSA(hashes.SHA256()))
    if algorithm == "ED25519_SHA_512" and message_type == "RAW":  # "requires KMS MessageType:RAW"
        return key.private_key.sign(message)
    raise _AwsFault(400, "ValidationException", f"{algorithm} does not take MessageType {message_type}")


class _AwsFault(Exception):
    def __init__(self, status, error_type, message):
        super().__init__(message)
        self.status, self.error_type, self.message = status, error_type, message


# --- Google Cloud KMS ----------------------------------------------------------------------------------

_GCP_PENDING_READS = 2  # gets that still see PENDING_GENERATION after create


def crc32c_bitwise(data: bytes) -> int:
    """CRC-32C computed bit by bit, independently of the backend's table-driven one."""
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 & -(crc & 1))
    return crc ^ 0xFFFFFFFF


@dataclass
class _GcpVersion:
    algorithm: str
    private_key: object
    protection_level: str
    pending_reads: int
    created: str


@dataclass
class CloudKmsEmulator:
    """Cloud KMS's cryptoKeys.create and cryptoKeyVersions get, getPublicKey and asymmetricSign, behind one
    bearer token; also the metadata server's token route, which hands that token out."""

    token: str = "ya29.emulator-access-token"
    pending_reads: int = _GCP_PENDING_READS
    corrupt_signatures: int = 0  # answers whose signatureCrc32c is wrong, to exercise the client's retry
    exchanges: list[Exchange] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)
    versions: dict[str, _GcpVersion] = field(default_factory=dict)
    token_requests: int = 0

    def __enter__(self) -> CloudKmsEmulator:
        self._server = _Server(self._respond)
        self.url = self._server.url
        return self

    def __exit__(self, *exc):
        self._server.stop()

    @property
    def metadata_token_url(self) -> str:
        return self.url + "/computeMetadata/v1/instance/service-accounts/default/token"

    def _respond(self, method, raw_path, headers, body):
        parts = urlsplit(raw_path)
        if parts.path.startswith("/computeMetadata/"):
            return self._metadata_token(parts.path, headers)
        query = parse_qs(parts.query)
        params = _json_or_none(body)
        try:
            method_id, names = kms_models.check_gcp_request(method, parts.path, query, params if body else None)
        except kms_models.ModelViolation as violation:
            self.violations.append(str(violation))
            status, answer, method_id = 400, _gcp_error(400, "INVALID_ARGUMENT", str(violation)), "?"
        else:
            status, answer = self._handle(method_id, names, query, params, headers)
        self.exchanges.append(Exchange(method_id, method, raw_path, params, query, status, answer))
        return status, {"Content-Type": "application/json; charset=UTF-8"}, answer

    def _handle(self, method_id, names, query, params, headers):
        if headers.get("Authorization") != f"Bearer {self.token}":
            return 401, _gcp_error(401, "UNAUTHENTICATED", "Request had invalid authentication credentials.")
        short = method_id.rsplit(".", 1)[-1]
        try:
            answer = getattr(self, f"_method_{short}")(names, query, params)
        except _GcpFault as fault:
            return fault.code, _gcp_error(fault.code, fault.status, fault.message)
        kms_models.check_gcp_response(method_id, answer)
        return 200, answer

    def _metadata_token(self, path, headers):
        if path != urlsplit(self.metadata_token_url).path:
            return 404, {}, {"error": "not found"}
        if headers.get("Metadata-Flavor") != "Google":
            return 403, {}, {"error": "Missing Metadata-Flavor:Google header."}
        self.token_requests += 1
        return 200, {"Metadata-Flavor": "Google"}, {"access_token": self.token, "expires_in": 3599,
                                                    "token_type": "Bearer"}

    def _version(self, name) -> _GcpVersion:
        if name not in self.versions:
            raise _GcpFault(404, "NOT_FOUND", f"{name} not found.")
        return self.versions[name]

    def _method_create(self, names, query, body):
        key_id = (query.get("cryptoKeyId") or [""])[0]
        # The parameter's description: "must be unique within a KeyRing and match [a-zA-Z0-9_-]{1,63}".
        if not re.fullmatch(r"[a-zA-Z0-9_-]{1,63}", key_id):
            raise _GcpFault(400, "INVALID_ARGUMENT", "cryptoKeyId is invalid")
        name = f"{names['parent']}/cryptoKeys/{key_id}"
        if f"{name}/cryptoKeyVersions/1" in self.versions:
            raise _GcpFault(409, "ALREADY_EXISTS", f"{name} already exists.")
        template = body.get("versionTemplate", {})
        algorithm = template.get("algorithm")
        if body.get("purpose") != "ASYMMETRIC_SIGN" or algorithm not in _GCP_KEYS:
            raise _GcpFault(400, "INVALID_ARGUMENT", "the emulator makes ASYMMETRIC_SIGN keys of three algorithms")
        level = template.get("protectionLevel", "SOFTWARE")
        created = _now_rfc3339()
        self.versions[f"{name}/cryptoKeyVersions/1"] = _GcpVersion(algorithm, _GCP_KEYS[algorithm](), level,
                                                                   self.pending_reads, created)
        return {"name": name, "purpose": "ASYMMETRIC_SIGN", "createTime": created,
                "versionTemplate": {"algorithm": algorithm, "protectionLevel": level},
                "destroyScheduledDuration": "2592000s"}

    def _method_get(self, names, query, body):
        version = self._version(names["name"])
        state = "PENDING_GENERATION" if version.pending_reads else "ENABLED"
        version.pending_reads = max(version.pending_reads - 1, 0)
        answer = {"name": names["name"], "state": state, "protectionLevel": version.protection_level,
                  "algorithm": version.algorithm, "createTime": version.created}
        return answer if state != "ENABLED" else {**answer, "generateTime": version.created}

    def _method_getPublicKey(self, names, query, body):
        version = self._enabled(names["name"])
        requested = (query.get("publicKeyFormat") or ["PUBLIC_KEY_FORMAT_UNSPECIFIED"])[0]
        public = version.private_key.public_key()
        answer = {"name": names["name"], "algorithm": version.algorithm, "protectionLevel": version.protection_level}
        if version.algorithm == "PQ_SIGN_ML_DSA_65":
            # The parameter's description: required for PQC algorithms, an error otherwise.
            if requested != "NIST_PQC":
                raise _GcpFault(400, "INVALID_ARGUMENT", "publicKeyFormat NIST_PQC is required for this key")
            raw = public.public_bytes_raw()
            return {**answer, "publicKeyFormat": "NIST_PQC",
                    "publicKey": {"data": _b64(raw), "crc32cChecksum": str(crc32c_bitwise(raw))}}
        if requested != "PUBLIC_KEY_FORMAT_UNSPECIFIED":
            raise _GcpFault(400, "INVALID_ARGUMENT", "the emulator answers EC keys in the default PEM only")
        pem = public.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        return {**answer, "pem": pem.decode(), "pemCrc32c": str(crc32c_bitwise(pem))}

    def _method_asymmetricSign(self, names, query, body):
        version = self._enabled(names["name"])
        # proto3: an empty bytes field is the same as none. "It can't be supplied if digest is supplied".
        if bool(body.get("data")) == bool(body.get("digest")):
            raise _GcpFault(400, "INVALID_ARGUMENT", "exactly one of data and digest")
        signed, checked = _gcp_signed_input(body)
        signature = _gcp_signature(version, body, signed)
        crc = crc32c_bitwise(signature)
        if self.corrupt_signatures:
            self.corrupt_signatures -= 1
            crc ^= 1
        return {"signature": _b64(signature), "signatureCrc32c": str(crc), "name": names["name"],
                "verifiedDataCrc32c": checked == "data", "verifiedDigestCrc32c": checked == "digest",
                "protectionLevel": version.protection_level}

    def _enabled(self, name) -> _GcpVersion:
        version = self._version(name)
        if version.pending_reads:
            raise _GcpFault(400, "FAILED_PRECONDITION", f"{name} is not enabled, current state is: "
                                                        "PENDING_GENERATION.")
        return version


_GCP_KEYS = {"PQ_SIGN_ML_DSA_65": MLDSA65PrivateKey.generate, "EC_SIGN_P256_SHA256": lambda: ec.generate_private_key(
    ec.SECP256R1()), "EC_SIGN_ED25519": ed25519.Ed25519PrivateKey.generate}


def _gcp_signed_input(body: dict) -> tuple[bytes, str | None]:
    """The bytes to sign and which checksum, if any, was sent and matched (a mismatch is an error)."""
    if body.get("data"):
        signed, crc_field, kind = base64.b64decode(body["data"]), "dataCrc32c", "data"
    else:
        signed, crc_field, kind = base64.b64decode(body["digest"].get("sha256", "")), "digestCrc32c", "digest"
    if crc_field not in body:
        return signed, None
    if int(body[crc_field]) != crc32c_bitwise(signed):
        raise _GcpFault(400, "INVALID_ARGUMENT", f"The checksum in field {crc_field} did not match the data.")
    return signed, kind


def _gcp_signature(version: _GcpVersion, body: dict, signed: bytes) -> bytes:
    if version.algorithm == "EC_SIGN_P256_SHA256":
        if "digest" not in body or len(signed) != 32:
            raise _GcpFault(400, "INVALID_ARGUMENT", "EC_SIGN_P256_SHA256 signs a 32-byte digest.sha256")
        return version.private_key.sign(signed, ec.ECDSA(Prehashed(hashes.SHA256())))
    if not body.get("data"):  # pure modes: "taking data as input"
        raise _GcpFault(400, "INVALID_ARGUMENT", f"{version.algorithm} signs data, not a digest")
    return version.private_key.sign(signed)


class _GcpFault(Exception):
    def __init__(self, code, status, message):
        super().__init__(message)
        self.code, self.status, self.message = code, status, message


def _gcp_error(code: int, status: str, message: str) -> dict:
    return {"error": {"code": code, "message": message, "status": status}}


def _now_rfc3339() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime())


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _json_or_none(body: bytes):
    try:
        return json.loads(body) if body else None
    except ValueError:
        return None
