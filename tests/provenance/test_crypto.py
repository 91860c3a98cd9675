"""ML-DSA-65 wrapper tests, cross-checked against the independent dilithium-py implementation."""

from __future__ import annotations

import hashlib
import os
import random

import pytest
from dilithium_py.ml_dsa import ML_DSA_65

from record_format import crypto

# Fixed vectors computed once with dilithium-py 1.5.1 (ML_DSA_65.key_derive and
# ML_DSA_65.sign(..., deterministic=True), empty context).  Stored as digests to stay compact.
FIXED_MESSAGE = b'{"content_hash":"sha3-256:00","model":"fixed-vector"}'
FIXED_VECTORS = [
    # (seed hex, SHA3-256(public key), key_id, SHA3-256(deterministic signature of FIXED_MESSAGE))
    (
        "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f",
        "1800725067e388d837d911fe4f66101cc1961b1bb755030dc574272cfb00013f",
        "d666806e11cee19a",
        "d143ff610fce5741239c7fe6d053f5d3cab4b9177d25ea9c9ed3306b264736b4",
    ),
    (
        "00" * 32,
        "b0681bf95c4068feb39a3099dbcc299108cc779dbeed196debdea877074a37aa",
        "085ba380ff386dd5",
        "184b510ee4f6ca05c6672780fbc4b201319746e03d90b95ca666ae0b799e68c4",
    ),
    (
        "ff" * 32,
        "123eda80e865a1e8e6c3ac05c511f9c72a24e736ab95fc487be9205d2625196f",
        "accc50ec0bce6148",
        "4795b423d24bf90b64c524a35f7c0e9301c0a96bc749d9799e644f34b56e7ace",
    ),
]

# Random payloads come from a seeded generator: xdist workers must collect identical test ids.
_rng = random.Random(204)
CROSS_CHECK_PAYLOADS = [b"", b"x", _rng.randbytes(64), _rng.randbytes(1000), "héllo wörld €".encode()]


@pytest.fixture(scope="module")
def keypair() -> tuple[bytes, bytes]:
    return crypto.generate_keypair()


def test_constants_match_fips_204_ml_dsa_65_sizes() -> None:
    assert crypto.PUBLIC_KEY_BYTES == 1952
    assert crypto.SIGNATURE_BYTES == 3309
    assert crypto.SEED_BYTES == 32
    assert crypto.ALGORITHM == "ml-dsa-65"


def test_generated_keypair_has_the_documented_sizes_and_matching_public_key(
    keypair: tuple[bytes, bytes],
) -> None:
    seed, public_key = keypair
    assert len(seed) == 32
    assert len(public_key) == 1952
    assert crypto.public_key_from_seed(seed) == public_key


def test_each_generated_keypair_is_fresh() -> None:
    assert crypto.generate_keypair()[0] != crypto.generate_keypair()[0]


def test_signature_round_trips(keypair: tuple[bytes, bytes]) -> None:
    seed, public_key = keypair
    signature = crypto.sign(seed, b"hello")
    assert len(signature) == 3309
    assert crypto.verify(public_key, b"hello", signature) is True


def test_tampered_message_fails_verification(keypair: tuple[bytes, bytes]) -> None:
    seed, public_key = keypair
    signature = crypto.sign(seed, b"hello")
    assert crypto.verify(public_key, b"hellp", signature) is False
    assert crypto.verify(public_key, b"hello ", signature) is False


def test_tampered_signature_fails_verification(keypair: tuple[bytes, bytes]) -> None:
    seed, public_key = keypair
    signature = bytearray(crypto.sign(seed, b"hello"))
    for position in (0, 100, 2000, len(signature) - 1):
        tampered = signature.copy()
        tampered[position] ^= 0x01
        assert crypto.verify(public_key, b"hello", bytes(tampered)) is False


def test_signature_under_another_key_fails_verification(keypair: tuple[bytes, bytes]) -> None:
    seed, _ = keypair
    _, other_public_key = crypto.generate_keypair()
    assert crypto.verify(other_public_key, b"hello", crypto.sign(seed, b"hello")) is False


@pytest.mark.parametrize(
    ("public_key", "signature"),
    [
        (b"", None),
        (b"\x00" * 1951, None),
        (b"\x00" * 1953, None),
        (None, b""),
        (None, b"\x00" * 3308),
        (None, b"\x00" * 3310),
        (None, b"\xff" * 3309),
        (b"", b""),
    ],
)
def test_malformed_key_or_signature_returns_false_instead_of_raising(
    keypair: tuple[bytes, bytes], public_key: bytes | None, signature: bytes | None
) -> None:
    seed, good_public_key = keypair
    good_signature = crypto.sign(seed, b"hello")
    assert (
        crypto.verify(
            good_public_key if public_key is None else public_key,
            b"hello",
            good_signature if signature is None else signature,
        )
        is False
    )


def test_verify_returns_false_for_non_bytes_arguments(keypair: tuple[bytes, bytes]) -> None:
    seed, public_key = keypair
    signature = crypto.sign(seed, b"hello")
    assert crypto.verify("not bytes", b"hello", signature) is False  # type: ignore[arg-type]
    assert crypto.verify(public_key, "hello", signature) is False  # type: ignore[arg-type]
    assert crypto.verify(public_key, b"hello", None) is False  # type: ignore[arg-type]


def test_verify_accepts_bytearray_and_memoryview(keypair: tuple[bytes, bytes]) -> None:
    seed, public_key = keypair
    signature = crypto.sign(seed, b"hello")
    assert crypto.verify(bytearray(public_key), memoryview(b"hello"), bytearray(signature)) is True


def test_sign_rejects_seed_of_wrong_length() -> None:
    with pytest.raises(ValueError):
        crypto.sign(b"\x00" * 31, b"hello")
    with pytest.raises(ValueError):
        crypto.public_key_from_seed(b"\x00" * 33)


def test_sign_rejects_non_bytes_seed() -> None:
    with pytest.raises(TypeError):
        crypto.sign("0" * 32, b"hello")  # type: ignore[arg-type]


@pytest.mark.parametrize("message", ["hello", 5, None])
def test_sign_rejects_non_bytes_message(keypair: tuple[bytes, bytes], message: object) -> None:
    with pytest.raises(TypeError):
        crypto.sign(keypair[0], message)  # type: ignore[arg-type]


def test_is_valid_public_key_checks_length_and_type(keypair: tuple[bytes, bytes]) -> None:
    _, public_key = keypair
    assert crypto.is_valid_public_key(public_key) is True
    assert crypto.is_valid_public_key(public_key[:-1]) is False
    assert crypto.is_valid_public_key(public_key + b"\x00") is False
    assert crypto.is_valid_public_key(b"") is False
    assert crypto.is_valid_public_key("x" * 1952) is False  # type: ignore[arg-type]


def test_key_id_is_short_stable_and_distinct(keypair: tuple[bytes, bytes]) -> None:
    _, public_key = keypair
    kid = crypto.key_id(public_key)
    assert kid == hashlib.sha256(public_key).hexdigest()[:16]
    assert kid == crypto.key_id(public_key)
    assert kid != crypto.key_id(crypto.generate_keypair()[1])


@pytest.mark.parametrize("payload", CROSS_CHECK_PAYLOADS)
def test_our_signature_verifies_with_dilithium_py(keypair: tuple[bytes, bytes], payload: bytes) -> None:
    seed, public_key = keypair
    assert ML_DSA_65.verify(public_key, payload, crypto.sign(seed, payload), ctx=b"") is True


@pytest.mark.parametrize("payload", CROSS_CHECK_PAYLOADS)
def test_dilithium_py_signature_verifies_with_ours(payload: bytes) -> None:
    public_key, secret_key = ML_DSA_65.keygen()
    signature = ML_DSA_65.sign(secret_key, payload, ctx=b"")
    assert crypto.verify(public_key, payload, signature) is True
    assert crypto.verify(public_key, payload + b"!", signature) is False


def test_dilithium_py_rejects_our_signature_over_another_message(keypair: tuple[bytes, bytes]) -> None:
    seed, public_key = keypair
    assert ML_DSA_65.verify(public_key, b"other", crypto.sign(seed, b"hello"), ctx=b"") is False


def test_seed_derives_the_same_public_key_as_dilithium_py() -> None:
    for _ in range(3):
        seed = os.urandom(32)
        dilithium_public_key, _ = ML_DSA_65.key_derive(seed)
        assert crypto.public_key_from_seed(seed) == dilithium_public_key


@pytest.mark.parametrize(("seed_hex", "public_key_sha3", "kid", "signature_sha3"), FIXED_VECTORS)
def test_fixed_seed_gives_the_pinned_public_key_and_key_id(
    seed_hex: str, public_key_sha3: str, kid: str, signature_sha3: str
) -> None:
    public_key = crypto.public_key_from_seed(bytes.fromhex(seed_hex))
    assert hashlib.sha3_256(public_key).hexdigest() == public_key_sha3
    assert crypto.key_id(public_key) == kid


@pytest.mark.parametrize(("seed_hex", "public_key_sha3", "kid", "signature_sha3"), FIXED_VECTORS)
def test_pinned_deterministic_dilithium_py_signature_verifies_with_ours(
    seed_hex: str, public_key_sha3: str, kid: str, signature_sha3: str
) -> None:
    dilithium_public_key, secret_key = ML_DSA_65.key_derive(bytes.fromhex(seed_hex))
    signature = ML_DSA_65.sign(secret_key, FIXED_MESSAGE, ctx=b"", deterministic=True)
    # The digest pins the exact signature bytes, so this is a fixed vector, not a live round trip.
    assert hashlib.sha3_256(signature).hexdigest() == signature_sha3
    our_public_key = crypto.public_key_from_seed(bytes.fromhex(seed_hex))
    assert our_public_key == dilithium_public_key
    assert crypto.verify(our_public_key, FIXED_MESSAGE, signature) is True
    assert crypto.verify(our_public_key, FIXED_MESSAGE + b" ", signature) is False


def test_signatures_are_hedged_so_repeated_signing_differs_but_both_verify(
    keypair: tuple[bytes, bytes],
) -> None:
    seed, public_key = keypair
    first, second = crypto.sign(seed, b"same"), crypto.sign(seed, b"same")
    assert first != second
    assert crypto.verify(public_key, b"same", first) and crypto.verify(public_key, b"same", second)
