"""The signer service's wire protocol: what a web or task worker sends the process that holds the keys,
and what comes back. Pure: no Django, no sockets beyond the frame helpers.

A frame is a 4-byte big-endian length and that many bytes of canonical CBOR, at most MAX_FRAME_BYTES.
Both directions are authenticated with HMAC-SHA256 under the deployment's signer secret, each with its
own domain label, so neither side accepts what the other did not send: the signer refuses a request
whose MAC does not hold (a forgery) or whose time is outside WINDOW_SECONDS of its clock (a stale
replay; the caller's `request_id` is remembered for that window to refuse a fresh one), and the worker
refuses an answer whose MAC does not hold or that answers another request. MACs are compared in constant
time. The message to sign travels as it is: the signer logs its SHA-256, never its bytes.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import socket
import struct
from dataclasses import dataclass

import cbor2

VERSION = 1
MAX_FRAME_BYTES = 1024 * 1024  # a C2PA claim is tens of KB; records and checkpoints far less
WINDOW_SECONDS = 30
REQUEST_ID_BYTES = 16
PURPOSES = ("record", "c2pa-claim", "c2pa-countersignature", "checkpoint")
ALGORITHMS = ("ml-dsa-65", "es256")
ERRORS = ("bad_request", "forbidden", "not_found", "revoked", "refused", "unavailable", "replayed")
_REQUEST_LABEL, _RESPONSE_LABEL = b"svc-signer request v1\x00", b"svc-signer response v1\x00"
_LENGTH = struct.Struct(">I")
_MAC_BYTES = 32
_MIN_SECRET_BYTES = 32


class ProtocolError(ValueError):
    """A frame or message that is not what the other side must send; the message says why."""


@dataclass(frozen=True)
class SignRequest:
    """Sign `message` with the key `kid` of `generator_id`, for `purpose`, on behalf of `org_id`."""

    org_id: str
    generator_id: str
    kid: str
    algorithm: str
    purpose: str
    message: bytes
    request_id: bytes
    issued_at_ms: int

    @classmethod
    def new(cls, *, org_id: str, generator_id: str, kid: str, algorithm: str, purpose: str, message: bytes,
            now_ms: int) -> SignRequest:
        return cls(org_id, generator_id, kid, algorithm, purpose, message, os.urandom(REQUEST_ID_BYTES), now_ms)

    @property
    def message_digest(self) -> str:
        """What the signer logs about the message: its SHA-256, never its bytes."""
        return hashlib.sha256(self.message).hexdigest()


@dataclass(frozen=True)
class SignResponse:
    request_id: bytes
    signature: bytes | None = None
    error: str | None = None  # one of ERRORS when the signer did not sign
    detail: str = ""


def seal_request(request: SignRequest, secret: bytes) -> bytes:
    fields = {"v": VERSION, "id": request.request_id, "t": request.issued_at_ms, "org": request.org_id,
              "gen": request.generator_id, "kid": request.kid, "alg": request.algorithm, "for": request.purpose,
              "msg": request.message}
    return _sealed(fields, _REQUEST_LABEL, secret)


def open_request(body: bytes, secret: bytes, *, now_ms: int) -> SignRequest:
    """The request a frame holds, once its MAC and time hold. Raises ProtocolError."""
    fields = _opened(body, _REQUEST_LABEL, secret)
    request = SignRequest(_text(fields, "org"), _text(fields, "gen"), _text(fields, "kid"), _text(fields, "alg"),
                          _text(fields, "for"), _bytes(fields, "msg"), _bytes(fields, "id"), _int(fields, "t"))
    if len(request.request_id) != REQUEST_ID_BYTES:
        raise ProtocolError("the request id is not 16 bytes")
    if abs(now_ms - request.issued_at_ms) > WINDOW_SECONDS * 1000:
        raise ProtocolError("the request is outside the time window (a replay, or clocks apart)")
    if request.algorithm not in ALGORITHMS or request.purpose not in PURPOSES:
        raise ProtocolError("unknown algorithm or purpose")
    return request


def seal_response(response: SignResponse, secret: bytes) -> bytes:
    fields: dict = {"v": VERSION, "id": response.request_id}
    if response.signature is not None:
        fields["sig"] = response.signature
    else:
        fields["err"], fields["detail"] = response.error or "bad_request", response.detail
    return _sealed(fields, _RESPONSE_LABEL, secret)


def open_response(body: bytes, secret: bytes, *, request_id: bytes) -> SignResponse:
    """The answer to the request `request_id`, once its MAC holds. Raises ProtocolError."""
    fields = _opened(body, _RESPONSE_LABEL, secret)
    if not hmac.compare_digest(_bytes(fields, "id"), request_id):
        raise ProtocolError("the answer is to another request")
    if "sig" in fields:
        return SignResponse(request_id, signature=_bytes(fields, "sig"))
    error = _text(fields, "err")
    if error not in ERRORS:
        raise ProtocolError("unknown error code")
    return SignResponse(request_id, error=error, detail=_text(fields, "detail"))


def write_frame(connection: socket.socket, body: bytes) -> None:
    if len(body) > MAX_FRAME_BYTES:
        raise ProtocolError(f"a frame is at most {MAX_FRAME_BYTES} bytes")
    connection.sendall(_LENGTH.pack(len(body)) + body)


def read_frame(connection: socket.socket) -> bytes:
    """One frame's body. Raises ProtocolError for a length over MAX_FRAME_BYTES (before reading it) or a
    connection that ends inside a frame; EOFError when it ends between frames."""
    header = _read_exactly(connection, _LENGTH.size, at_start=True)
    (length,) = _LENGTH.unpack(header)
    if length > MAX_FRAME_BYTES:
        raise ProtocolError(f"a frame of {length} bytes is over the {MAX_FRAME_BYTES}-byte limit")
    return _read_exactly(connection, length, at_start=False)


def check_secret(secret: bytes) -> bytes:
    if len(secret) < _MIN_SECRET_BYTES:
        raise ProtocolError(f"the signer secret must be at least {_MIN_SECRET_BYTES} bytes")
    return secret


def _read_exactly(connection: socket.socket, size: int, *, at_start: bool) -> bytes:
    data = bytearray()
    while len(data) < size:
        chunk = connection.recv(min(size - len(data), 65536))
        if not chunk:
            if at_start and not data:
                raise EOFError
            raise ProtocolError("the connection ended inside a frame")
        data += chunk
    return bytes(data)


def _sealed(fields: dict, label: bytes, secret: bytes) -> bytes:
    body = cbor2.dumps(fields, canonical=True)
    mac = hmac.new(check_secret(secret), label + body, hashlib.sha256).digest()
    return cbor2.dumps([body, mac], canonical=True)


def _opened(frame: bytes, label: bytes, secret: bytes) -> dict:
    try:
        body, mac = cbor2.loads(frame)
    except (cbor2.CBORDecodeError, ValueError, TypeError, OverflowError, RecursionError, LookupError):
        raise ProtocolError("not a signer frame") from None
    if not isinstance(body, bytes) or not isinstance(mac, bytes) or len(mac) != _MAC_BYTES:
        raise ProtocolError("not a signer frame")
    expected = hmac.new(check_secret(secret), label + body, hashlib.sha256).digest()
    if not hmac.compare_digest(mac, expected):
        raise ProtocolError("the frame's MAC does not hold: forged, altered, or another secret")
    try:
        fields = cbor2.loads(body)
    except (cbor2.CBORDecodeError, ValueError, TypeError, OverflowError, RecursionError, LookupError):
        raise ProtocolError("the frame's body is not CBOR") from None
    if not isinstance(fields, dict) or fields.get("v") != VERSION:
        raise ProtocolError("unknown protocol version")
    return fields


def _text(fields: dict, name: str) -> str:
    value = fields.get(name)
    if not isinstance(value, str) or len(value) > 256:
        raise ProtocolError(f"field {name!r} is not short text")
    return value


def _bytes(fields: dict, name: str) -> bytes:
    value = fields.get(name)
    if not isinstance(value, bytes):
        raise ProtocolError(f"field {name!r} is not bytes")
    return value


def _int(fields: dict, name: str) -> int:
    value = fields.get(name)
    if type(value) is not int:
        raise ProtocolError(f"field {name!r} is not an integer")
    return value
