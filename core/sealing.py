"""Encryption at rest for the secrets the service must read back: generators' private keys (ML-DSA
seeds) and webhook signing secrets, each under its own key-encryption key (core/keyring.py).

Blob layouts::

    version 2: 0x02 || id length (1 byte, 1-32) || key id (ASCII) || nonce (12 random bytes)
               || AES-256-GCM ciphertext || tag (16 bytes)
    version 1: 0x01 || nonce || ciphertext || tag          (sealed before key rings: key id `legacy`)

The key id names the entry of the KEY_ENCRYPTION_KEY ring that sealed the blob, so `unseal` picks the
key by id instead of trying each. The GCM associated data is everything before the nonce (version, and
in version 2 the id) followed by the caller's `associated_data`, which identifies the owning row (the
generator id and kid, the endpoint id): the id is authenticated, and a blob copied into another row
fails to decrypt. Only version 2 is written; version 1 is read for the blobs of older releases.

This module must not import Django.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from core.secret_ring import KEY_ID_MAX_LENGTH, LEGACY_KEY_ID

BLOB_VERSION_1 = 0x01
BLOB_VERSION_2 = 0x02
KEK_BYTES = 32
NONCE_BYTES = 12
TAG_BYTES = 16


class SealedBlobError(Exception):
    """The blob is malformed, of an unknown version, or does not authenticate under this KEK and AD."""


class UnknownKeyId(SealedBlobError):
    """The blob names a key id the ring does not hold (a key removed too early, or a blob from elsewhere)."""

    def __init__(self, key_id: str):
        super().__init__(f"sealed under key id {key_id!r}, which the key ring does not hold")
        self.key_id = key_id


def seal(secret: bytes, kek: bytes, *, key_id: str, associated_data: bytes) -> bytes:
    """Encrypt ``secret`` under the 32-byte ``kek`` (the ring's key ``key_id``), bound to ``associated_data``.

    Raises ValueError for a KEK that is not 32 bytes, a malformed key id or an empty secret.
    """
    _require_kek(kek)
    if not secret:
        raise ValueError("refusing to encrypt an empty secret")
    encoded_id = key_id.encode("ascii") if key_id.isascii() else b""
    if not 1 <= len(encoded_id) <= KEY_ID_MAX_LENGTH:
        raise ValueError(f"a key id is 1 to {KEY_ID_MAX_LENGTH} ASCII characters")
    # Random 96-bit nonces are safe here: a KEK encrypts at most a few thousand secrets,
    # far below the ~2**32 messages where nonce collisions become a concern.
    nonce = os.urandom(NONCE_BYTES)
    header = bytes([BLOB_VERSION_2, len(encoded_id)]) + encoded_id
    ciphertext = AESGCM(kek).encrypt(nonce, bytes(secret), header + bytes(associated_data))
    return header + nonce + ciphertext


def sealed_key_id(blob: bytes) -> str:
    """The id of the ring key that sealed ``blob`` (`legacy` for a version-1 blob). Raises SealedBlobError."""
    return _split(bytes(blob))[1]


def unseal(blob: bytes, keks: Mapping[str, bytes], *, associated_data: bytes) -> bytes:
    """Return the secret sealed in ``blob``, with the key of ``keks`` (id -> 32 bytes) the blob names.

    Raises UnknownKeyId when ``keks`` has no key of that id, SealedBlobError if the blob is malformed,
    of unknown version or fails authentication, and ValueError for a KEK that is not 32 bytes.
    """
    header, key_id, nonce, ciphertext = _split(bytes(blob))
    kek = keks.get(key_id)
    if kek is None:
        raise UnknownKeyId(key_id)
    _require_kek(kek)
    try:
        return AESGCM(kek).decrypt(nonce, ciphertext, header + bytes(associated_data))
    except InvalidTag as exc:
        # Deliberately vague: wrong KEK, wrong row and tampering look the same to an attacker.
        raise SealedBlobError("sealed blob failed authentication") from exc


def _split(blob: bytes) -> tuple[bytes, str, bytes, bytes]:
    """(header, key id, nonce, ciphertext with tag)."""
    if not blob:
        raise SealedBlobError("sealed blob is empty")
    if blob[0] == BLOB_VERSION_1:
        header, key_id = blob[:1], LEGACY_KEY_ID
    elif blob[0] == BLOB_VERSION_2:
        length = blob[1] if len(blob) > 1 else 0
        if not 1 <= length <= KEY_ID_MAX_LENGTH:
            raise SealedBlobError("sealed blob has a malformed key id")
        header = blob[: 2 + length]
        try:
            key_id = header[2:].decode("ascii")
        except UnicodeDecodeError:
            raise SealedBlobError("sealed blob has a malformed key id") from None
    else:
        raise SealedBlobError(f"unknown sealed blob version {blob[0]}")
    if len(blob) <= len(header) + NONCE_BYTES + TAG_BYTES:
        raise SealedBlobError("sealed blob is too short")
    nonce = blob[len(header) : len(header) + NONCE_BYTES]
    return header, key_id, nonce, blob[len(header) + NONCE_BYTES :]


def _require_kek(kek: bytes) -> None:
    if not isinstance(kek, bytes) or len(kek) != KEK_BYTES:
        raise ValueError(f"the key-encryption key must be {KEK_BYTES} bytes")
