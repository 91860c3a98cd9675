"""What cloud KMS answers, turned into the encodings the key-backend interface promises (signer.backends.base).

Pure: no Django, no network. Both clouds hand public keys back as X.509 SubjectPublicKeyInfo (DER from AWS,
PEM from Google, except ML-DSA there) and ECDSA signatures as DER; the service wants raw keys and COSE's
r || s. Also the FIPS 204 message representative mu, for KMS APIs that sign a precomputed mu.
"""

from __future__ import annotations

import hashlib

from cryptography import exceptions
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519
from cryptography.hazmat.primitives.asymmetric.mldsa import MLDSA65PublicKey
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

from signer.backends.base import BackendError

ML_DSA_65_PUBLIC_KEY_BYTES = 1952
ML_DSA_65_SIGNATURE_BYTES = 3309
P256_COORDINATE_BYTES = 32
MU_BYTES = 64


def raw_public_key(key: object, algorithm: str) -> bytes:
    """The interface's raw public key of a loaded pyca key, which must be of `algorithm`'s type.
    Raises BackendError when the store answered a key of another type."""
    if algorithm == "ml-dsa-65" and isinstance(key, MLDSA65PublicKey):
        # pyca maps only OID 2.16.840.1.101.3.4.3.18 (id-ml-dsa-65) to this class.
        return key.public_bytes_raw()
    if algorithm == "es256" and isinstance(key, ec.EllipticCurvePublicKey) and isinstance(key.curve, ec.SECP256R1):
        return key.public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)
    if algorithm == "ed25519" and isinstance(key, ed25519.Ed25519PublicKey):
        return key.public_bytes_raw()
    raise BackendError(f"the key store answered a public key that is not {algorithm}")


def public_key_from_der(spki_der: bytes, algorithm: str) -> bytes:
    """The raw public key in a DER SubjectPublicKeyInfo. Raises BackendError."""
    return _public_key(serialization.load_der_public_key, spki_der, algorithm, "DER")


def public_key_from_pem(spki_pem: bytes, algorithm: str) -> bytes:
    """The raw public key in a PEM SubjectPublicKeyInfo. Raises BackendError."""
    return _public_key(serialization.load_pem_public_key, spki_pem, algorithm, "PEM")


def _public_key(load, spki: bytes, algorithm: str, form: str) -> bytes:
    try:
        key = load(spki)
    except (ValueError, exceptions.UnsupportedAlgorithm):  # not a key, or of a type pyca does not know
        raise BackendError(f"the key store answered a public key that is not {form} SubjectPublicKeyInfo") from None
    return raw_public_key(key, algorithm)


def ecdsa_der_to_raw(signature_der: bytes) -> bytes:
    """A DER ECDSA P-256 signature as COSE's 64-byte r || s (RFC 9053 2.1). Raises BackendError."""
    try:
        r, s = decode_dss_signature(signature_der)
    except ValueError:
        raise BackendError("the key store answered an ECDSA signature that is not DER") from None
    if max(r, s).bit_length() > 8 * P256_COORDINATE_BYTES:
        raise BackendError("the key store answered an ECDSA signature too large for P-256")
    return r.to_bytes(P256_COORDINATE_BYTES, "big") + s.to_bytes(P256_COORDINATE_BYTES, "big")


def ml_dsa_external_mu(public_key: bytes, message: bytes) -> bytes:
    """FIPS 204's message representative for pure ML-DSA with the empty context (Algorithm 2 line 10 and
    Algorithm 7 line 6): mu = SHAKE256(SHAKE256(pk, 64) || 0x00 || 0x00 || M, 64)."""
    public_key_hash = hashlib.shake_256(public_key).digest(MU_BYTES)
    # 0x00: pure (not HashML-DSA) domain separator; 0x00: the context's length, zero.
    return hashlib.shake_256(public_key_hash + b"\x00\x00" + message).digest(MU_BYTES)
