"""Verify a COSE_Sign1 signature with the public key of an X.509 certificate, for the algorithms C2PA uses.

C2PA 2.2 section 13.2.1 allows ES256/384/512, PS256/384/512 and Ed25519 (COSE ids -7, -35, -36, -37, -38,
-39, -8); we add ML-DSA-65 (-49, RFC 9964), which our own manifests use. ECDSA signatures travel in COSE as
the fixed-size `r || s` (RFC 9053 2.1), so they are converted to DER for pyca; RSASSA-PSS uses MGF1 with
the same hash and a salt as long as the hash (RFC 8230 2).
"""

from __future__ import annotations

from cryptography import exceptions, x509
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, padding, rsa
from cryptography.hazmat.primitives.asymmetric.mldsa import MLDSA65PublicKey
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

_ECDSA = {-7: (hashes.SHA256, ec.SECP256R1), -35: (hashes.SHA384, ec.SECP384R1), -36: (hashes.SHA512, ec.SECP521R1)}
_PSS = {-37: hashes.SHA256, -38: hashes.SHA384, -39: hashes.SHA512}
EDDSA, ML_DSA_65 = -8, -49
SUPPORTED_ALGORITHMS = frozenset((*_ECDSA, *_PSS, EDDSA, ML_DSA_65))


class UnsupportedAlgorithm(Exception):
    """The COSE algorithm is missing, unknown, or does not fit the certificate's key."""


class BadCertificate(Exception):
    """The signing certificate cannot be parsed."""


def load_certificate(certificate_der: bytes) -> x509.Certificate:
    """The parsed certificate, its validity period readable. Raises BadCertificate."""
    try:
        certificate = x509.load_der_x509_certificate(certificate_der)
        certificate.not_valid_before_utc, certificate.not_valid_after_utc  # noqa: B018 - pyca parses lazily
    except (ValueError, x509.InvalidVersion):  # a mangled version field is its own exception in pyca
        raise BadCertificate("the signing certificate is not DER X.509") from None
    return certificate


def verify(alg: object, certificate: x509.Certificate, message: bytes, signature: bytes) -> bool:
    """Whether `signature` over `message` verifies with the certificate's key under COSE algorithm `alg`.

    Raises UnsupportedAlgorithm when `alg` is not one we verify or does not match the key type.
    """
    if type(alg) is not int or alg not in SUPPORTED_ALGORITHMS:
        raise UnsupportedAlgorithm(f"COSE algorithm {alg!r} is not supported")
    try:
        key = certificate.public_key()
    except (ValueError, exceptions.UnsupportedAlgorithm):
        raise UnsupportedAlgorithm("the certificate's key type is not supported") from None
    try:
        _verify_with(alg, key, message, signature)
    except (exceptions.InvalidSignature, ValueError):
        return False
    return True


def _verify_with(alg: int, key: object, message: bytes, signature: bytes) -> None:
    if alg in _ECDSA:
        digest, curve = _ECDSA[alg]
        _require(isinstance(key, ec.EllipticCurvePublicKey) and isinstance(key.curve, curve))
        size = (key.curve.key_size + 7) // 8
        if len(signature) != 2 * size:
            raise exceptions.InvalidSignature
        r, s = int.from_bytes(signature[:size], "big"), int.from_bytes(signature[size:], "big")
        key.verify(encode_dss_signature(r, s), message, ec.ECDSA(digest()))
    elif alg in _PSS:
        _require(isinstance(key, rsa.RSAPublicKey))
        digest = _PSS[alg]()
        key.verify(signature, message, padding.PSS(padding.MGF1(digest), digest.digest_size), digest)
    elif alg == EDDSA:
        _require(isinstance(key, ed25519.Ed25519PublicKey))
        key.verify(signature, message)
    else:
        _require(isinstance(key, MLDSA65PublicKey))
        key.verify(signature, message)


def _require(condition: bool) -> None:
    if not condition:
        raise UnsupportedAlgorithm("the COSE algorithm does not match the certificate's key")
