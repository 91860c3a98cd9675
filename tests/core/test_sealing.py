"""Encryption-at-rest tests: version-2 blobs name their key id; version-1 blobs (older releases) still read."""

from __future__ import annotations

import os

import pytest
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from core.hkdf import derive_key
from core.sealing import SealedBlobError, UnknownKeyId, seal, sealed_key_id, unseal

KEK = bytes(range(32))
OLD_KEK = bytes(range(32, 64))
KEYS = {"k2": KEK, "k1": OLD_KEK}
SEED = os.urandom(32)
AD = b"generator:7f1c|kid:d666806e11cee19a"


def _v1_blob(secret: bytes, kek: bytes, ad: bytes) -> bytes:
    """A blob exactly as releases before key rings wrote it: 0x01 || nonce || AES-256-GCM(ad = 0x01 || ad)."""
    nonce = os.urandom(12)
    return b"\x01" + nonce + AESGCM(kek).encrypt(nonce, secret, b"\x01" + ad)


def test_encrypted_seed_round_trips() -> None:
    blob = seal(SEED, KEK, key_id="k2", associated_data=AD)
    assert unseal(blob, KEYS, associated_data=AD) == SEED


def test_blob_layout_is_version_key_id_nonce_ciphertext_and_tag() -> None:
    blob = seal(SEED, KEK, key_id="k2", associated_data=AD)
    assert blob[:4] == b"\x02\x02k2"
    assert len(blob) == 4 + 12 + len(SEED) + 16
    assert SEED not in blob
    nonce = blob[4:16]  # the documented layout, decrypted by hand: the id is authenticated with the AD
    assert AESGCM(KEK).decrypt(nonce, blob[16:], b"\x02\x02k2" + AD) == SEED


def test_the_key_id_picks_the_key_so_old_blobs_read_after_a_new_key_is_added() -> None:
    old = seal(SEED, OLD_KEK, key_id="k1", associated_data=AD)
    assert sealed_key_id(old) == "k1"
    assert unseal(old, KEYS, associated_data=AD) == SEED
    assert unseal(old, {"k1": OLD_KEK}, associated_data=AD) == SEED


def test_a_version_1_blob_reads_with_the_legacy_key() -> None:
    blob = _v1_blob(SEED, OLD_KEK, AD)
    assert sealed_key_id(blob) == "legacy"
    assert unseal(blob, {"k2": KEK, "legacy": OLD_KEK}, associated_data=AD) == SEED
    with pytest.raises(UnknownKeyId) as raised:
        unseal(blob, {"k2": KEK, "k1": OLD_KEK}, associated_data=AD)  # the legacy key was renamed: no guessing
    assert raised.value.key_id == "legacy"


def test_an_unknown_key_id_fails_cleanly_without_trying_other_keys() -> None:
    blob = seal(SEED, KEK, key_id="k9", associated_data=AD)
    with pytest.raises(UnknownKeyId) as raised:
        unseal(blob, KEYS, associated_data=AD)
    assert raised.value.key_id == "k9" and isinstance(raised.value, SealedBlobError)


def test_a_key_id_rewritten_in_the_blob_is_rejected() -> None:
    blob = seal(SEED, KEK, key_id="k2", associated_data=AD)
    relabelled = b"\x02\x02k1" + blob[4:]
    with pytest.raises(SealedBlobError):
        unseal(relabelled, {"k1": KEK}, associated_data=AD)  # the same key under another id: the AD differs


def test_each_encryption_uses_a_fresh_nonce() -> None:
    first = seal(SEED, KEK, key_id="k2", associated_data=AD)
    second = seal(SEED, KEK, key_id="k2", associated_data=AD)
    assert first[4:16] != second[4:16]
    assert first != second


def test_wrong_kek_is_rejected() -> None:
    blob = seal(SEED, KEK, key_id="k2", associated_data=AD)
    with pytest.raises(SealedBlobError):
        unseal(blob, {"k2": bytes(32)}, associated_data=AD)


def test_wrong_associated_data_is_rejected_so_blobs_cannot_move_between_rows() -> None:
    blob = seal(SEED, KEK, key_id="k2", associated_data=AD)
    with pytest.raises(SealedBlobError):
        unseal(blob, KEYS, associated_data=b"generator:other|kid:d666806e11cee19a")
    with pytest.raises(SealedBlobError):
        unseal(blob, KEYS, associated_data=b"")


@pytest.mark.parametrize("version", [1, 2])
def test_any_flipped_bit_in_the_blob_is_rejected(version: int) -> None:
    blob = seal(SEED, KEK, key_id="k2", associated_data=AD) if version == 2 else _v1_blob(SEED, KEK, AD)
    keys = {"k2": KEK, "legacy": KEK}
    for position in range(len(blob)):
        for bit in (0x01, 0x80):
            tampered = bytearray(blob)
            tampered[position] ^= bit
            with pytest.raises(SealedBlobError):
                unseal(bytes(tampered), keys, associated_data=AD)


@pytest.mark.parametrize(
    "blob", [b"", b"\x01", b"\x01" + bytes(28), b"\x01" + bytes(29), b"\x02", b"\x02\x00" + bytes(60),
             b"\x02\x21" + bytes(80), b"\x02\x02k2" + bytes(28), b"\x02\x02\xff\xfe" + bytes(40), b"\x03" + bytes(60)]
)
def test_truncated_malformed_or_unknown_version_blobs_are_rejected(blob: bytes) -> None:
    with pytest.raises(SealedBlobError):
        unseal(blob, {"k2": KEK, "legacy": KEK}, associated_data=AD)


def test_truncated_real_blob_is_rejected() -> None:
    blob = seal(SEED, KEK, key_id="k2", associated_data=AD)
    with pytest.raises(SealedBlobError):
        unseal(blob[:-1], KEYS, associated_data=AD)


@pytest.mark.parametrize("kek", [b"", bytes(16), bytes(31), bytes(33), "k" * 32])
def test_kek_must_be_32_bytes(kek: bytes) -> None:
    with pytest.raises(ValueError):
        seal(SEED, kek, key_id="k2", associated_data=AD)
    with pytest.raises(ValueError):
        unseal(seal(SEED, KEK, key_id="k2", associated_data=AD), {"k2": kek}, associated_data=AD)


@pytest.mark.parametrize("key_id", ["", "k" * 33, "clé"])
def test_key_ids_that_do_not_fit_the_header_are_refused(key_id: str) -> None:
    with pytest.raises(ValueError):
        seal(SEED, KEK, key_id=key_id, associated_data=AD)


def test_derived_key_works_as_a_kek() -> None:
    kek = derive_key("configured-secret", "private-key-encryption")
    blob = seal(SEED, kek, key_id="legacy", associated_data=AD)
    assert unseal(blob, {"legacy": kek}, associated_data=AD) == SEED
