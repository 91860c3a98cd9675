"""Encryption-at-rest tests for generator private keys."""

from __future__ import annotations

import os

import pytest

from config.hkdf import derive_key
from config.sealing import SealedBlobError, seal, unseal

KEK = bytes(range(32))
SEED = os.urandom(32)
AD = b"generator:7f1c|kid:d666806e11cee19a"


def test_encrypted_seed_round_trips() -> None:
    blob = seal(SEED, KEK, associated_data=AD)
    assert unseal(blob, KEK, associated_data=AD) == SEED


def test_blob_layout_is_version_nonce_ciphertext_and_tag() -> None:
    blob = seal(SEED, KEK, associated_data=AD)
    assert blob[0] == 0x01
    assert len(blob) == 1 + 12 + len(SEED) + 16
    assert SEED not in blob


def test_each_encryption_uses_a_fresh_nonce() -> None:
    first = seal(SEED, KEK, associated_data=AD)
    second = seal(SEED, KEK, associated_data=AD)
    assert first[1:13] != second[1:13]
    assert first != second


def test_wrong_kek_is_rejected() -> None:
    blob = seal(SEED, KEK, associated_data=AD)
    with pytest.raises(SealedBlobError):
        unseal(blob, bytes(32), associated_data=AD)


def test_wrong_associated_data_is_rejected_so_blobs_cannot_move_between_rows() -> None:
    blob = seal(SEED, KEK, associated_data=AD)
    with pytest.raises(SealedBlobError):
        unseal(blob, KEK, associated_data=b"generator:other|kid:d666806e11cee19a")
    with pytest.raises(SealedBlobError):
        unseal(blob, KEK, associated_data=b"")


def test_any_flipped_bit_in_the_blob_is_rejected() -> None:
    blob = seal(SEED, KEK, associated_data=AD)
    for position in range(len(blob)):
        tampered = bytearray(blob)
        tampered[position] ^= 0x80
        with pytest.raises(SealedBlobError):
            unseal(bytes(tampered), KEK, associated_data=AD)


@pytest.mark.parametrize(
    "blob", [b"", b"\x01", b"\x01" + bytes(28), b"\x01" + bytes(29), b"\x02" + bytes(60)]
)
def test_truncated_or_unknown_version_blobs_are_rejected(blob: bytes) -> None:
    with pytest.raises(SealedBlobError):
        unseal(blob, KEK, associated_data=AD)


def test_truncated_real_blob_is_rejected() -> None:
    blob = seal(SEED, KEK, associated_data=AD)
    with pytest.raises(SealedBlobError):
        unseal(blob[:-1], KEK, associated_data=AD)


@pytest.mark.parametrize("kek", [b"", bytes(16), bytes(31), bytes(33), "k" * 32])
def test_kek_must_be_32_bytes(kek: bytes) -> None:
    with pytest.raises(ValueError):
        seal(SEED, kek, associated_data=AD)
    with pytest.raises(ValueError):
        unseal(b"\x01" + bytes(60), kek, associated_data=AD)


def test_derived_key_works_as_a_kek() -> None:
    kek = derive_key("configured-secret", "private-key-encryption")
    blob = seal(SEED, kek, associated_data=AD)
    assert unseal(blob, kek, associated_data=AD) == SEED
