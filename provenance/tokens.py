"""Compact, authenticated record tokens (``svc_...``).

A token names one provenance record and is authenticated by a service key, so a
token cannot be forged or altered without the key.  Exact layout (version 2, minted)::

    token   = "svc_" + base64url_nopad(payload)                  # 4 + 48 = 52 characters
    payload = version (1 byte, 0x02)
              || record_id (16 bytes, uuid.UUID.bytes, big-endian RFC 4122 order)
              || key_tag (3 bytes)                                # which key signed
              || mac (16 bytes)                                   # 36 bytes in total
    key_tag = HMAC-SHA256(key, "svc-token key tag")[:3]
    mac     = HMAC-SHA256(key, version || record_id || key_tag)[:16]

Version 1 (minted before key rings, still accepted) is 0x01 || record_id || mac with
mac = HMAC-SHA256(key, version || record_id)[:16]: 33 bytes, 48 characters.

Both payloads are a multiple of 3 bytes, so the base64url text has no padding and no
unused trailing bits: every token has exactly one spelling and any changed character
changes the decoded bytes.  The record id sits at the same offset in both versions
(clients read it without a key).  Tokens use only ``[A-Za-z0-9_-]``, within the spec's
128 characters of ``[A-Za-z0-9_.-]``.

Key rotation: ``mint_token`` uses one key (the ring's newest).  ``parse_token`` takes
every key of the ring: a version-2 token is checked only with the key(s) whose tag it
carries, so verification picks the key instead of trying each; a version-1 token, which
names no key, is checked with every key.  The tag is derived from the key itself, not from
its ring id: it stays right when ids are renamed, and 3 bytes keep the token compact.

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
TOKEN_VERSION_2 = 0x02
MAC_BYTES = 16
KEY_TAG_BYTES = 3
MIN_KEY_BYTES = 16

_UUID_BYTES = 16
_KEY_TAG_LABEL = b"svc-token key tag"
# Payload bytes of each version; * 4/3 characters, no padding: 44 for version 1, 48 for version 2.
_PAYLOAD_BYTES = {TOKEN_VERSION_1: 1 + _UUID_BYTES + MAC_BYTES,
                  TOKEN_VERSION_2: 1 + _UUID_BYTES + KEY_TAG_BYTES + MAC_BYTES}
_TOKEN_RE = re.compile(rf"{TOKEN_PREFIX}(?:[A-Za-z0-9_-]{{44}}|[A-Za-z0-9_-]{{48}})")


class InvalidToken(Exception):
    """The token is malformed, altered, of an unknown version, or not signed by any known key."""


def mint_token(record_id: uuid.UUID, key: bytes) -> str:
    """Return the version-2 ``svc_`` token for ``record_id``; raises TypeError/ValueError for a bad id or key."""
    if not isinstance(record_id, uuid.UUID):
        raise TypeError("record_id must be a uuid.UUID")
    _require_key(key)
    header = bytes([TOKEN_VERSION_2]) + record_id.bytes + key_tag(key)
    payload = header + _mac(key, header)
    return TOKEN_PREFIX + base64.urlsafe_b64encode(payload).rstrip(b"=").decode("ascii")


def parse_token(token: str, keys: Sequence[bytes]) -> uuid.UUID:
    """Return the record id carried by ``token`` if a key of ``keys`` authenticates it.

    Raises InvalidToken for anything malformed, altered, of unknown version or signed by a key not
    in ``keys``, and ValueError if ``keys`` is empty or contains an unusable key (a config error).
    """
    if not keys:
        raise ValueError("parse_token needs at least one key")
    for key in keys:
        _require_key(key)
    payload = _decode_payload(token)
    header, mac = payload[:-MAC_BYTES], payload[-MAC_BYTES:]
    if payload[0] == TOKEN_VERSION_2:
        tag = header[1 + _UUID_BYTES :]
        keys = [key for key in keys if hmac.compare_digest(key_tag(key), tag)]
    # Check every candidate even after a match so timing does not reveal which key signed.
    matched = False
    for key in keys:
        matched |= hmac.compare_digest(_mac(key, header), mac)
    if not matched:
        raise InvalidToken("token authentication failed")
    return uuid.UUID(bytes=header[1 : 1 + _UUID_BYTES])


def key_tag(key: bytes) -> bytes:
    """The 3 bytes a version-2 token carries to name the key that signed it (no secret: a MAC output)."""
    return hmac.new(key, _KEY_TAG_LABEL, hashlib.sha256).digest()[:KEY_TAG_BYTES]


def _decode_payload(token: object) -> bytes:
    # The regex gate matters: base64 decoders silently skip characters outside the
    # alphabet, and the prefix/length/charset checks are cheap rejections of garbage.
    if not isinstance(token, str) or len(token) > TOKEN_MAX_LENGTH:
        raise InvalidToken("token must be a str of at most 128 characters")
    if _TOKEN_RE.fullmatch(token) is None:
        raise InvalidToken("token is malformed")
    encoded = token[len(TOKEN_PREFIX) :]
    try:
        payload = base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4))
    except (binascii.Error, ValueError) as exc:
        raise InvalidToken("token is not valid base64url") from exc
    if payload[0] not in _PAYLOAD_BYTES:
        raise InvalidToken("unknown token version")
    if len(payload) != _PAYLOAD_BYTES[payload[0]]:
        raise InvalidToken("token has the wrong length for its version")
    return payload


def _mac(key: bytes, header: bytes) -> bytes:
    return hmac.new(key, header, hashlib.sha256).digest()[:MAC_BYTES]


def _require_key(key: bytes) -> None:
    if not isinstance(key, bytes):
        raise TypeError("token keys must be bytes")
    if len(key) < MIN_KEY_BYTES:
        raise ValueError(f"token keys must be at least {MIN_KEY_BYTES} bytes")
