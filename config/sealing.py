"""Encryption at rest for the secrets the service must read back: generators' private keys (ML-DSA
seeds) and webhook signing secrets, each under its own key-encryption key (config/keyring.py).

Blob layout (version 1)::

    blob = version (1 byte, 0x01) || nonce (12 random bytes) || AES-256-GCM ciphertext || tag (16 bytes)

The GCM associated data is ``version || associated_data``: the version byte is
authenticated, and callers pass something that identifies the owning row (e.g. the
generator id and key id) so a blob copied into another row fails to decrypt.

This module must not import Django.
"""

from __future__ import annotations

import os

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

BLOB_VERSION_1 = 0x01
KEK_BYTES = 32
NONCE_BYTES = 12
TAG_BYTES = 16


class SealedBlobError(Exception):
    """The blob is malformed, of an unknown version, or does not authenticate under this KEK and AD."""


def seal(secret: bytes, kek: bytes, *, associated_data: bytes) -> bytes:
    """Encrypt ``secret`` under the 32-byte ``kek``, bound to ``associated_data``.

    Raises ValueError for a KEK that is not 32 bytes or an empty secret.
    """
    _require_kek(kek)
    if not secret:
        raise ValueError("refusing to encrypt an empty secret")
    # Random 96-bit nonces are safe here: a KEK encrypts at most a few thousand secrets,
    # far below the ~2**32 messages where nonce collisions become a concern.
    nonce = os.urandom(NONCE_BYTES)
    version = bytes([BLOB_VERSION_1])
    ciphertext = AESGCM(kek).encrypt(nonce, bytes(secret), version + bytes(associated_data))
    return version + nonce + ciphertext


def unseal(blob: bytes, kek: bytes, *, associated_data: bytes) -> bytes:
    """Return the secret sealed in ``blob`` under ``kek`` and ``associated_data``.

    Raises SealedBlobError if the blob is malformed, of unknown version or fails authentication,
    and ValueError for a KEK that is not 32 bytes.
    """
    _require_kek(kek)
    blob = bytes(blob)
    if len(blob) <= 1 + NONCE_BYTES + TAG_BYTES:
        raise SealedBlobError("sealed blob is too short")
    if blob[0] != BLOB_VERSION_1:
        raise SealedBlobError(f"unknown sealed blob version {blob[0]}")
    version, nonce, ciphertext = blob[:1], blob[1 : 1 + NONCE_BYTES], blob[1 + NONCE_BYTES :]
    try:
        return AESGCM(kek).decrypt(nonce, ciphertext, version + bytes(associated_data))
    except InvalidTag as exc:
        # Deliberately vague: wrong KEK, wrong row and tampering look the same to an attacker.
        raise SealedBlobError("sealed blob failed authentication") from exc


def _require_kek(kek: bytes) -> None:
    if not isinstance(kek, bytes) or len(kek) != KEK_BYTES:
        raise ValueError(f"the key-encryption key must be {KEK_BYTES} bytes")
