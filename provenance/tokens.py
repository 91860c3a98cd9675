"""Compact, authenticated record tokens (``svc_...``).

A token names one provenance record and is authenticated by a service key, so a
token cannot be forged or altered without the key.  Exact layout (version 1)::

    token   = "svc_" + base64url_nopad(payload)                  # 4 + 44 = 48 characters
    payload = version (1 byte, 0x01)
              || record_id (16 bytes, uuid.UUID.bytes, big-endian RFC 4122 order)
              || mac (16 bytes)                                   # 33 bytes in total
    mac     = HMAC-SHA256(key, version || record_id)[:16]

33 bytes is a multiple of 3, so the base64url text has no padding and no unused
trailing bits: every token has exactly one spelling and any changed character
changes the decoded bytes.  Tokens use only ``[A-Za-z0-9_-]`` and are far below
the 128-character ceiling that later versions must also respect.

Key rotation: ``mint_token`` uses one key; ``parse_token`` accepts a sequence of
keys (current first, then retired ones) and succeeds if any of them verifies.

This module must not import Django.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
import uuid
from collections.abc import Sequence

TOKEN_PREFIX = "svc_"
TOKEN_MAX_LENGTH = 128
TOKEN_VERSION_1 = 0x01
MAC_BYTES = 16
MIN_KEY_BYTES = 16

_UUID_BYTES = 16
_V1_PAYLOAD_BYTES = 1 + _UUID_BYTES + MAC_BYTES
_V1_ENCODED_CHARS = 44  # 33 bytes * 4/3, no padding
_V1_TOKEN_RE = re.compile(rf"{TOKEN_PREFIX}[A-Za-z0-9_-]{{{_V1_ENCODED_CHARS}}}")


class InvalidToken(Exception):
    """The token is malformed, altered, of an unknown version, or not signed by any known key."""


def mint_token(record_id: uuid.UUID, key: bytes) -> str:
    """Return the ``svc_`` token for ``record_id``; raises TypeError/ValueError for a bad id or key."""
    if not isinstance(record_id, uuid.UUID):
        raise TypeError("record_id must be a uuid.UUID")
    _require_key(key)
    header = bytes([TOKEN_VERSION_1]) + record_id.bytes
    payload = header + _mac(key, header)
    return TOKEN_PREFIX + base64.urlsafe_b64encode(payload).rstrip(b"=").decode("ascii")


def parse_token(token: str, keys: Sequence[bytes]) -> uuid.UUID:
    """Return the record id carried by ``token`` if any of ``keys`` authenticates it.

    Raises InvalidToken for anything malformed, altered, of unknown version or signed by an
    unknown key, and ValueError if ``keys`` is empty or contains an unusable key (a config error).
    """
    if not keys:
        raise ValueError("parse_token needs at least one key")
    for key in keys:
        _require_key(key)
    payload = _decode_payload(token)
    if payload[0] != TOKEN_VERSION_1:
        raise InvalidToken("unknown token version")
    header, mac = payload[: 1 + _UUID_BYTES], payload[1 + _UUID_BYTES :]
    # Check every key even after a match so timing does not reveal which key signed.
    matched = False
    for key in keys:
        matched |= hmac.compare_digest(_mac(key, header), mac)
    if not matched:
        raise InvalidToken("token authentication failed")
    return uuid.UUID(bytes=header[1:])


def _decode_payload(token: object) -> bytes:
    # The regex gate matters: base64 decoders silently skip characters outside the
    # alphabet, and the prefix/length/charset checks are cheap rejections of garbage.
    if not isinstance(token, str) or len(token) > TOKEN_MAX_LENGTH:
        raise InvalidToken("token must be a str of at most 128 characters")
    if _V1_TOKEN_RE.fullmatch(token) is None:
        raise InvalidToken("token is malformed")
    encoded = token[len(TOKEN_PREFIX) :]
    try:
        payload = base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4))
    except (binascii.Error, ValueError) as exc:
        raise InvalidToken("token is not valid base64url") from exc
    if len(payload) != _V1_PAYLOAD_BYTES:
        raise InvalidToken("token has the wrong length")
    return payload


def _mac(key: bytes, header: bytes) -> bytes:
    return hmac.new(key, header, hashlib.sha256).digest()[:MAC_BYTES]


def _require_key(key: bytes) -> None:
    if not isinstance(key, bytes):
        raise TypeError("token keys must be bytes")
    if len(key) < MIN_KEY_BYTES:
        raise ValueError(f"token keys must be at least {MIN_KEY_BYTES} bytes")
