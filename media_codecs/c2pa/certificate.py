"""A self-signed ML-DSA-65 X.509 certificate for a generator key: C2PA readers need an x5chain to parse
a signature at all, and check no profile or trust before they stop at the unknown algorithm."""

from __future__ import annotations

import hashlib
from datetime import datetime

from cryptography import x509
from cryptography.hazmat.primitives.asymmetric.mldsa import MLDSA65PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding
from cryptography.x509.oid import NameOID


def self_signed_certificate(private_key: MLDSA65PrivateKey, *, common_name: str, organization: str,
                            not_before: datetime, not_after: datetime) -> bytes:
    """DER of a self-signed end-entity certificate for the key; the serial comes from the public key."""
    public_key = private_key.public_key()
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name),
                      x509.NameAttribute(NameOID.ORGANIZATION_NAME, organization)])
    serial = int.from_bytes(hashlib.sha256(public_key.public_bytes_raw()).digest()[:16], "big") >> 1
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(public_key)
        .serial_number(serial or 1)
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False, key_encipherment=False,
                                     data_encipherment=False, key_agreement=False, key_cert_sign=False,
                                     crl_sign=False, encipher_only=False, decipher_only=False), critical=True)
        .sign(private_key, None)
    )
    return certificate.public_bytes(Encoding.DER)
