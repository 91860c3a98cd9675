"""ML-DSA-65 (FIPS 204) signing primitives for provenance records.

Pure ML-DSA with the EMPTY context string, through ``cryptography``'s OpenSSL
backend.  Private keys are stored as the 32-byte FIPS 204 seed ``xi`` (what
``private_bytes_raw`` returns); the expanded signing key is re-derived on demand.

This module must not import Django: it is used by workers and offline tools.
"""

from __future__ import annotations

import hashlib
from functools import lru_cache

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.mldsa import MLDSA65PrivateKey, MLDSA65PublicKey

ALGORITHM = "ml-dsa-65"
PUBLIC_KEY_BYTES = 1952
SIGNATURE_BYTES = 3309
SEED_BYTES = 32
KEY_ID_HEX_CHARS = 16

# Verification is the hot path (every record lookup verifies a signature); re-parsing
# the same 1952-byte public key each time is avoidable work, so loaded keys are cached
# (docs/performance.md, "Cached keys and the Redis client").
_PUBLIC_KEY_CACHE_SIZE = 1024
# Loading a signing key from its seed re-runs ML-DSA key expansion, a good part of what a
# signature costs; the few active generator keys are kept loaded (same section).
_PRIVATE_KEY_CACHE_SIZE = 256


@lru_cache(maxsize=_PUBLIC_KEY_CACHE_SIZE)
def _load_public_key(public_key: bytes) -> MLDSA65PublicKey:
    # lru_cache does not cache exceptions, so malformed keys never occupy a slot.
    return MLDSA65PublicKey.from_public_bytes(public_key)


@lru_cache(maxsize=_PRIVATE_KEY_CACHE_SIZE)
def _load_private_key(seed: bytes) -> MLDSA65PrivateKey:
    return MLDSA65PrivateKey.from_seed_bytes(seed)


def _require_seed(seed: bytes) -> bytes:
    if not isinstance(seed, bytes | bytearray | memoryview):
        raise TypeError("an ML-DSA-65 seed must be bytes")
    seed = bytes(seed)
    if len(seed) != SEED_BYTES:
        raise ValueError(f"an ML-DSA-65 seed is {SEED_BYTES} bytes, got {len(seed)}")
    return seed


def generate_keypair() -> tuple[bytes, bytes]:
    """Return a fresh (32-byte seed, 1952-byte public key) pair from the OS CSPRNG."""
    private_key = MLDSA65PrivateKey.generate()
    return private_key.private_bytes_raw(), private_key.public_key().public_bytes_raw()


def private_key_from_seed(seed: bytes) -> MLDSA65PrivateKey:
    """The pyca key object of a 32-byte seed, for APIs that take one (an X.509 certificate builder)."""
    return _load_private_key(_require_seed(seed))


def public_key_from_seed(seed: bytes) -> bytes:
    """Return the 1952-byte public key for a 32-byte seed; raises TypeError/ValueError for a bad seed."""
    return _load_private_key(_require_seed(seed)).public_key().public_bytes_raw()


def sign(seed: bytes, message: bytes) -> bytes:
    """Sign ``message`` with pure ML-DSA-65 (empty context).

    Raises TypeError for a non-bytes seed or message and ValueError for a seed that is not 32 bytes.
    """
    # Refuse non-bytes explicitly: bytes(5) would silently sign five zero bytes.
    if not _is_bytes_like(message):
        raise TypeError("the message to sign must be bytes")
    # context=None is the empty context string of FIPS 204, which is what verifiers expect.
    return _load_private_key(_require_seed(seed)).sign(bytes(message))


def verify(public_key: bytes, message: bytes, signature: bytes) -> bool:
    """Return True iff ``signature`` is a valid ML-DSA-65 signature of ``message``; never raises."""
    if not _is_bytes_like(public_key) or not _is_bytes_like(message) or not _is_bytes_like(signature):
        return False
    public_key, signature = bytes(public_key), bytes(signature)
    # Cheap length checks first so garbage never reaches the key cache or OpenSSL.
    if len(public_key) != PUBLIC_KEY_BYTES or len(signature) != SIGNATURE_BYTES:
        return False
    try:
        _load_public_key(public_key).verify(signature, bytes(message))
    except (InvalidSignature, ValueError):
        return False
    return True


def is_valid_public_key(raw: bytes) -> bool:
    """Return True iff ``raw`` is a loadable 1952-byte ML-DSA-65 public key."""
    if not _is_bytes_like(raw):
        return False
    raw = bytes(raw)
    if len(raw) != PUBLIC_KEY_BYTES:
        return False
    try:
        _load_public_key(raw)
    except ValueError:
        return False
    return True


def key_id(public_key: bytes) -> str:
    """Return a short stable key id: the first 16 hex characters of SHA-256(public key)."""
    return hashlib.sha256(bytes(public_key)).hexdigest()[:KEY_ID_HEX_CHARS]


def _is_bytes_like(value: object) -> bool:
    return isinstance(value, bytes | bytearray | memoryview)
