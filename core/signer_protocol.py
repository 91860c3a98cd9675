"""The signer service's wire protocol: what a web or task worker sends the process that holds the keys,
and what comes back. Pure: no Django, no sockets beyond the frame helpers. It lives in core so that every
app that needs a key's work done (generators making keys, provenance signing records, the transparency log
signing checkpoints) can ask, while the signer app that answers sits above generators.

A request names an operation (`op`): `sign` (the message, with a purpose and an algorithm) or one of the
other OPERATIONS (making a key, issuing certificates), whose inputs travel in `args` and whose outputs come
back in `result`: maps of short text keys to text, bytes, integers or booleans.

A frame is a 4-byte big-endian length and that many bytes, at most MAX_FRAME_BYTES: a CBOR map, then its
32-byte HMAC-SHA256 under the deployment's signer secret. The MAC covers the map's bytes as sent (no
canonical form is needed) behind each kind's own domain label, so neither side accepts what the other did
not send. A connection opens with the signer's
hello: a fresh random challenge, authenticated (the worker knows it reached the signer). Each request's MAC
covers that challenge and the request's sequence number on the connection, which must grow: a request
copied to another connection does not authenticate there (a forgery to the signer, which closes it), one
sent again on its own connection is answered `replayed`. No store of request ids is needed, and so no
round trip to one. The signer also refuses a request whose time is outside WINDOW_SECONDS of its clock,
and the worker an answer whose MAC does not hold or that answers another request. MACs are compared in
constant time. The message to sign travels as it is: the signer logs its SHA-256, never its bytes.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import socket
import struct
from dataclasses import dataclass, field

import cbor2

VERSION = 4  # 2: operations (`op`, `args`, `result`); 3: the hello and sequence numbers; 4: map then MAC
MAX_FRAME_BYTES = 1024 * 1024  # a C2PA claim is tens of KB; records and checkpoints far less
WINDOW_SECONDS = 30
REQUEST_ID_BYTES = 16
CHALLENGE_BYTES = 16
PURPOSES = ("record", "c2pa-claim", "c2pa-countersignature", "checkpoint")
ALGORITHMS = ("ml-dsa-65", "es256", "ed25519")
OPERATIONS = ("sign", "generate-key", "issue-certificates", "ensure-authorities", "seal-secret")
MAX_ARGS = 16
ERRORS = ("bad_request", "forbidden", "not_found", "revoked", "refused", "unavailable", "replayed")
_REQUEST_LABEL, _RESPONSE_LABEL = b"svc-signer request v1\x00", b"svc-signer response v1\x00"
_HELLO_LABEL = b"svc-signer hello v1\x00"
_LENGTH = struct.Struct(">I")
_MAC_BYTES = 32
_MIN_SECRET_BYTES = 32


class ProtocolError(ValueError):
    """A frame or message that is not what the other side must send; the message says why."""


@dataclass(frozen=True)
class SignRequest:
    """Do `op` on behalf of `org_id`: for `sign`, sign `message` with the key `kid` of `generator_id` for
    `purpose`; other operations read what they need from `args` (and the fields that apply)."""

    org_id: str
    generator_id: str
    kid: str
    algorithm: str
    purpose: str
    message: bytes
    request_id: bytes
    issued_at_ms: int
    op: str = "sign"
    args: dict = field(default_factory=dict)
    sequence: int = 0  # on its connection, from 1, growing

    @classmethod
    def new(cls, *, org_id: str, generator_id: str, kid: str = "", algorithm: str = "", purpose: str = "",
            message: bytes = b"", now_ms: int, op: str = "sign", args: dict | None = None) -> SignRequest:
        return cls(org_id, generator_id, kid, algorithm, purpose, message, os.urandom(REQUEST_ID_BYTES), now_ms,
                   op, dict(args or {}))

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
    result: dict | None = None  # what an operation other than `sign` answers

    @property
    def ok(self) -> bool:
        return self.error is None


def seal_hello(challenge: bytes, secret: bytes) -> bytes:
    """The signer's first frame on a connection: the challenge every request on it is bound to."""
    return _sealed({"v": VERSION, "challenge": challenge}, _HELLO_LABEL, secret)


def open_hello(frame: bytes, secret: bytes) -> bytes:
    """The connection's challenge, once the hello's MAC holds. Raises ProtocolError."""
    challenge = _bytes(_opened(frame, _HELLO_LABEL, secret), "challenge")
    if len(challenge) != CHALLENGE_BYTES:
        raise ProtocolError("the challenge is not 16 bytes")
    return challenge


def seal_request(request: SignRequest, secret: bytes, *, challenge: bytes, sequence: int | None = None) -> bytes:
    """The request for the connection whose hello gave `challenge`, as number `sequence` on it (default: the
    request's own)."""
    fields = {"v": VERSION, "id": request.request_id, "t": request.issued_at_ms, "org": request.org_id,
              "gen": request.generator_id, "kid": request.kid, "alg": request.algorithm, "for": request.purpose,
              "msg": request.message, "op": request.op, "args": _checked_map(request.args, "args"),
              "seq": request.sequence if sequence is None else sequence}
    return _sealed(fields, _REQUEST_LABEL + challenge, secret)


def open_request(body: bytes, secret: bytes, *, now_ms: int, challenge: bytes) -> SignRequest:
    """The request a frame holds, once its MAC (on this connection's `challenge`) and time hold. Raises
    ProtocolError. Whether its sequence number grew is the connection's to check."""
    fields = _opened(body, _REQUEST_LABEL + challenge, secret)
    request = SignRequest(_text(fields, "org"), _text(fields, "gen"), _text(fields, "kid"), _text(fields, "alg"),
                          _text(fields, "for"), _bytes(fields, "msg"), _bytes(fields, "id"), _int(fields, "t"),
                          _text(fields, "op"), _checked_map(fields.get("args"), "args"), _int(fields, "seq"))
    if len(request.request_id) != REQUEST_ID_BYTES:
        raise ProtocolError("the request id is not 16 bytes")
    if abs(now_ms - request.issued_at_ms) > WINDOW_SECONDS * 1000:
        raise ProtocolError("the request is outside the time window (a replay, or clocks apart)")
    if request.op not in OPERATIONS:
        raise ProtocolError("unknown operation")
    if request.op == "sign" and (request.algorithm not in ALGORITHMS or request.purpose not in PURPOSES):
        raise ProtocolError("unknown algorithm or purpose")
    return request


def seal_response(response: SignResponse, secret: bytes) -> bytes:
    fields: dict = {"v": VERSION, "id": response.request_id}
    if response.signature is not None:
        fields["sig"] = response.signature
    elif response.error is None:
        fields["res"] = _checked_map(response.result or {}, "result")
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
    if "res" in fields:
        return SignResponse(request_id, result=_checked_map(fields["res"], "result"))
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
    first = connection.recv(min(size, 65536))
    if len(first) == size:  # the usual case: a frame's part arrives whole
        return first
    if not first:
        if at_start:
            raise EOFError
        raise ProtocolError("the connection ended inside a frame")
    data = bytearray(first)
    while len(data) < size:
        chunk = connection.recv(min(size - len(data), 65536))
        if not chunk:
            raise ProtocolError("the connection ended inside a frame")
        data += chunk
    return bytes(data)


def _sealed(fields: dict, label: bytes, secret: bytes) -> bytes:
    body = cbor2.dumps(fields)
    return body + hmac.digest(check_secret(secret), label + body, "sha256")


def _opened(frame: bytes, label: bytes, secret: bytes) -> dict:
    if len(frame) <= _MAC_BYTES:
        raise ProtocolError("not a signer frame")
    body, mac = frame[:-_MAC_BYTES], frame[-_MAC_BYTES:]
    if not hmac.compare_digest(mac, hmac.digest(check_secret(secret), label + body, "sha256")):
        raise ProtocolError("the frame's MAC does not hold: forged, altered, or another secret")
    try:  # only what authenticated is decoded
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


def _checked_map(value: object, name: str) -> dict:
    """`args` or `result`: at most MAX_ARGS short text keys, each to text, bytes, an integer or a boolean."""
    if not isinstance(value, dict) or len(value) > MAX_ARGS:
        raise ProtocolError(f"{name} is not a map of at most {MAX_ARGS} entries")
    for key, item in value.items():
        if not isinstance(key, str) or len(key) > 64 or not isinstance(item, str | bytes | int | bool):
            raise ProtocolError(f"{name} holds an entry that is not short text to text, bytes or a number")
    return dict(value)


def _int(fields: dict, name: str) -> int:
    value = fields.get(name)
    if type(value) is not int:
        raise ProtocolError(f"field {name!r} is not an integer")
    return value
