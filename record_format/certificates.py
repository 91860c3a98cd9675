"""X.509 certificates for C2PA signatures: a root CA, an intermediate CA and end-entity certificates, in two
hierarchies (classical ECDSA for the ES256 claim signature C2PA validators check, ML-DSA-65 for the
post-quantum countersignature), and the chain check the service's verifier and the client's offline
verifier share.

The end-entity profile is the C2PA 2.2 one as c2pa-rs checks it: v3, not a CA, KeyUsage digitalSignature
(critical), an allowed extended key usage and never anyExtendedKeyUsage, an authority key identifier, and
no critical extension it does not know. CA certificates carry BasicConstraints ca=True with a path length,
keyCertSign and both key identifiers.

Pure: no Django, no database, no network.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from cryptography import x509
from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.mldsa import MLDSA65PrivateKey, MLDSA65PublicKey
from cryptography.x509.oid import ExtendedKeyUsageOID, ExtensionOID, NameOID, ObjectIdentifier

ES256 = "es256"
ML_DSA_65 = "ml-dsa-65"
ML_DSA_65_OID = "2.16.840.1.101.3.4.3.18"  # id-ml-dsa-65 (RFC 9881)
# X.509's upper bound for a CommonName or an OrganizationName (RFC 5280, ub-common-name).
NAME_MAX_CHARS = 64
# Longest chain accepted, end entity to anchor: ours is three, a trust-listed CA's a few more. The bound
# keeps a hostile chain from costing many signature checks.
MAX_CHAIN_LENGTH = 10

DOCUMENT_SIGNING = ObjectIdentifier("1.3.6.1.5.5.7.3.36")  # id-kp-documentSigning (RFC 9336)
# c2pa-rs's list (sdk/src/crypto/cose/valid_eku_oids.cfg): emailProtection, documentSigning, timeStamping,
# OCSPSigning, Microsoft's and the C2PA's own claim-signing OIDs.
C2PA_ALLOWED_EKUS = frozenset({
    ExtendedKeyUsageOID.EMAIL_PROTECTION, DOCUMENT_SIGNING, ExtendedKeyUsageOID.TIME_STAMPING,
    ExtendedKeyUsageOID.OCSP_SIGNING, ObjectIdentifier("1.3.6.1.4.1.311.76.59.1.9"),
    ObjectIdentifier("1.3.6.1.4.1.62558.2.1"),
})
# What c2pa-rs accepts as the certificate's own signature algorithm (certificate_profile.rs); ML-DSA is
# not among them, which is why the ML-DSA hierarchy is separate.
_C2PA_SIGNATURE_ALGORITHMS = frozenset({
    "1.2.840.10045.4.3.2", "1.2.840.10045.4.3.3", "1.2.840.10045.4.3.4",  # ecdsa-with-SHA256/384/512
    "1.2.840.113549.1.1.11", "1.2.840.113549.1.1.12", "1.2.840.113549.1.1.13",  # sha*WithRSAEncryption
    "1.2.840.113549.1.1.10", "1.3.101.112",  # RSASSA-PSS, Ed25519
})
_KNOWN_CRITICAL = frozenset({
    x509.BasicConstraints.oid, x509.KeyUsage.oid, x509.ExtendedKeyUsage.oid, x509.SubjectAlternativeName.oid,
    x509.CertificatePolicies.oid, x509.PolicyConstraints.oid, x509.NameConstraints.oid, ExtensionOID.POLICY_MAPPINGS,
    x509.InhibitAnyPolicy.oid,
})

SigningKey = ec.EllipticCurvePrivateKey | MLDSA65PrivateKey
PublicKey = ec.EllipticCurvePublicKey | MLDSA65PublicKey


class CertificateError(ValueError):
    """Bytes that are not the certificate or key they should be (malformed PEM or DER, wrong key type)."""


@dataclass(frozen=True)
class ChainCheck:
    trusted: bool
    problem: str | None = None  # None when trusted


@dataclass(frozen=True)
class Validity:
    not_before: datetime
    not_after: datetime


def subject_name(*, organization: str, common_name: str) -> x509.Name:
    """O = organization, CN = common name, each cut to X.509's 64 characters (never empty)."""
    return x509.Name([
        x509.NameAttribute(NameOID.ORGANIZATION_NAME, _bounded(organization)),
        x509.NameAttribute(NameOID.COMMON_NAME, _bounded(common_name)),
    ])


def build_root(private_key: SigningKey, *, name: x509.Name, validity: Validity) -> x509.Certificate:
    """A self-signed root CA certificate (path length 1: one intermediate below it)."""
    public_key = private_key.public_key()
    builder = _ca_builder(public_key, subject=name, issuer=name, validity=validity, path_length=1)
    builder = builder.add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(public_key), critical=False)
    return _sign(builder, private_key)


def build_intermediate(public_key: PublicKey, *, name: x509.Name, issuer: x509.Certificate,
                       issuer_key: SigningKey, validity: Validity) -> x509.Certificate:
    """An intermediate CA certificate (path length 0: it issues end entities only)."""
    builder = _ca_builder(public_key, subject=name, issuer=issuer.subject, validity=_within(validity, issuer),
                          path_length=0)
    return _sign(builder.add_extension(_aki(issuer), critical=False), issuer_key)


def build_end_entity(public_key: PublicKey, *, name: x509.Name, issuer: x509.Certificate,
                     issuer_key: SigningKey, validity: Validity) -> x509.Certificate:
    """An end-entity signing certificate that passes the C2PA certificate profile."""
    validity = _within(validity, issuer)
    builder = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(issuer.subject)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(validity.not_before)
        .not_valid_after(validity.not_after)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_key_usage(digital_signature=True), critical=True)
        # documentSigning is the C2PA 2.x choice; emailProtection for validators that predate it.
        .add_extension(x509.ExtendedKeyUsage([DOCUMENT_SIGNING, ExtendedKeyUsageOID.EMAIL_PROTECTION]),
                       critical=False)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(public_key), critical=False)
        .add_extension(_aki(issuer), critical=False)
    )
    return _sign(builder, issuer_key)


def verify_chain(chain_der: Sequence[bytes], anchors_der: Sequence[bytes], at: datetime) -> ChainCheck:
    """Whether `chain_der` (end entity first, each next one its issuer, the root optional) leads to one of
    `anchors_der`, every certificate valid at `at`, every issuer a CA, every signature good.

    Problems: "empty chain", "chain too long", "malformed certificate", "loop", "not yet valid", "expired",
    "issuer mismatch", "bad signature", "not a CA", "path length exceeded", "untrusted".
    """
    if not chain_der:
        return ChainCheck(False, "empty chain")
    if len(chain_der) > MAX_CHAIN_LENGTH:
        return ChainCheck(False, "chain too long")
    try:
        chain = [load_der(der) for der in chain_der]
        anchors = [load_der(der) for der in anchors_der]
    except CertificateError:
        return ChainCheck(False, "malformed certificate")
    if len({c.fingerprint(hashes.SHA256()) for c in chain}) != len(chain):
        return ChainCheck(False, "loop")
    anchor = _anchor_for(chain, anchors)
    if anchor is None:
        return ChainCheck(False, "untrusted")
    path = [*_up_to_anchor(chain, anchor), anchor]
    problem = _validity_problem(path, at) or _link_problem(path)
    return ChainCheck(problem is None, problem)


def end_entity_problems(certificate: x509.Certificate, at: datetime) -> list[str]:
    """Why a certificate fails the C2PA 2.2 end-entity profile at `at`, as c2pa-rs checks it ([] when it passes)."""
    problems = []
    if certificate.version != x509.Version.v3:
        problems.append("not an X.509 v3 certificate")
    if not certificate.not_valid_before_utc <= at <= certificate.not_valid_after_utc:
        problems.append("not valid now (expired or not yet valid)")
    if certificate.signature_algorithm_oid.dotted_string not in _C2PA_SIGNATURE_ALGORITHMS:
        problems.append("signed with an algorithm C2PA does not accept")
    if is_ca(certificate):
        problems.append("a CA certificate, not an end-entity one")
    problems += _usage_problems(certificate)
    if _extension(certificate, x509.AuthorityKeyIdentifier) is None:
        problems.append("no authority key identifier")
    if any(e.critical and e.oid not in _KNOWN_CRITICAL for e in certificate.extensions):
        problems.append("a critical extension C2PA validators do not know")
    return problems


def is_ca(certificate: x509.Certificate) -> bool:
    constraints = _extension(certificate, x509.BasicConstraints)
    return constraints is not None and constraints.ca


def is_self_signed(certificate: x509.Certificate) -> bool:
    if certificate.issuer != certificate.subject:
        return False
    try:
        certificate.verify_directly_issued_by(certificate)
    except (InvalidSignature, ValueError, TypeError, UnsupportedAlgorithm):
        return False
    return True


def algorithm_name(certificate: x509.Certificate) -> str:
    """"ecdsa-p256", "ecdsa-p384", "ml-dsa-65", ... for the certificate's public key."""
    public_key = certificate.public_key()
    if isinstance(public_key, ec.EllipticCurvePublicKey):
        return {"secp256r1": "ecdsa-p256", "secp384r1": "ecdsa-p384", "secp521r1": "ecdsa-p521"}.get(
            public_key.curve.name, f"ecdsa-{public_key.curve.name}")
    if isinstance(public_key, MLDSA65PublicKey):
        return ML_DSA_65
    return type(public_key).__name__.removesuffix("PublicKey").lower()


def load_der(der: bytes) -> x509.Certificate:
    """Raises CertificateError for bytes that are not one DER certificate with a readable public key."""
    try:
        certificate = x509.load_der_x509_certificate(bytes(der))
        certificate.public_key()
    except (ValueError, TypeError, UnsupportedAlgorithm) as error:
        raise CertificateError(f"not a DER certificate: {error}") from None
    return certificate


def load_pem_chain(pem: str | bytes) -> list[x509.Certificate]:
    """Every certificate of a PEM bundle, in order. Raises CertificateError (none, or unreadable)."""
    data = pem.encode() if isinstance(pem, str) else bytes(pem)
    try:
        certificates = x509.load_pem_x509_certificates(data)
        for certificate in certificates:
            certificate.public_key()
    except (ValueError, TypeError, UnsupportedAlgorithm) as error:
        raise CertificateError(f"not a PEM certificate: {error}") from None
    return certificates


def load_pem_ec_private_key(pem: str | bytes) -> ec.EllipticCurvePrivateKey:
    """An unencrypted PEM EC private key (PKCS#8 or SEC1). Raises CertificateError otherwise."""
    data = pem.encode() if isinstance(pem, str) else bytes(pem)
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError, UnsupportedAlgorithm) as error:
        raise CertificateError(f"not an unencrypted PEM private key: {error}") from None
    if not isinstance(key, ec.EllipticCurvePrivateKey):
        raise CertificateError("not an EC private key")
    return key


def to_der(certificate: x509.Certificate) -> bytes:
    return certificate.public_bytes(serialization.Encoding.DER)


def der_to_pem(der: bytes) -> str:
    return load_der(der).public_bytes(serialization.Encoding.PEM).decode("ascii")


def ec_private_key_der(key: ec.EllipticCurvePrivateKey) -> bytes:
    """PKCS#8 DER of an EC key: what gets sealed at rest."""
    return key.private_bytes(serialization.Encoding.DER, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def ec_private_key_from_der(der: bytes) -> ec.EllipticCurvePrivateKey:
    key = serialization.load_der_private_key(bytes(der), password=None)
    if not isinstance(key, ec.EllipticCurvePrivateKey):
        raise CertificateError("not an EC private key")
    return key


def same_public_key(a: PublicKey, b: PublicKey) -> bool:
    spki = (serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return a.public_bytes(*spki) == b.public_bytes(*spki)


def _anchor_for(chain: list[x509.Certificate], anchors: list[x509.Certificate]) -> x509.Certificate | None:
    """The anchor the chain ends in: one of its own certificates (the root included), or the issuer of its last."""
    ders = {to_der(a): a for a in anchors}
    for certificate in chain:
        if to_der(certificate) in ders:
            return certificate
    last = chain[-1]
    candidates = [a for a in anchors if a.subject == last.issuer]
    for anchor in candidates:
        try:
            last.verify_directly_issued_by(anchor)
            return anchor
        except (InvalidSignature, ValueError, TypeError, UnsupportedAlgorithm):
            continue
    # A named issuer whose signature does not check is a forgery, not merely an unknown CA.
    return candidates[0] if candidates else None


def _up_to_anchor(chain: list[x509.Certificate], anchor: x509.Certificate) -> list[x509.Certificate]:
    for index, certificate in enumerate(chain):
        if certificate == anchor:
            return chain[:index]
    return chain


def _validity_problem(path: list[x509.Certificate], at: datetime) -> str | None:
    for certificate in path:
        if at < certificate.not_valid_before_utc:
            return "not yet valid"
        if at > certificate.not_valid_after_utc:
            return "expired"
    return None


def _link_problem(path: list[x509.Certificate]) -> str | None:
    for depth, (child, parent) in enumerate(itertools.pairwise(path)):
        if child.issuer != parent.subject:
            return "issuer mismatch"
        constraints = _extension(parent, x509.BasicConstraints)
        usage = _extension(parent, x509.KeyUsage)
        if constraints is None or not constraints.ca or (usage is not None and not usage.key_cert_sign):
            return "not a CA"
        # `depth` CAs stand between this parent and the end entity.
        if constraints.path_length is not None and depth > constraints.path_length:
            return "path length exceeded"
        try:
            child.verify_directly_issued_by(parent)
        except (InvalidSignature, ValueError, TypeError, UnsupportedAlgorithm):
            return "bad signature"
    return None


def _usage_problems(certificate: x509.Certificate) -> list[str]:
    problems = []
    try:
        usage = certificate.extensions.get_extension_for_class(x509.KeyUsage)
    except (x509.ExtensionNotFound, ValueError):
        usage = None
    if usage is None or not usage.value.digital_signature:
        problems.append("no KeyUsage digitalSignature")
    elif usage.value.key_cert_sign:
        problems.append("KeyUsage keyCertSign on an end-entity certificate")
    elif not usage.critical:
        problems.append("KeyUsage is not marked critical")
    ekus = _extension(certificate, x509.ExtendedKeyUsage)
    if ekus is None or not C2PA_ALLOWED_EKUS.intersection(ekus):
        problems.append("no extended key usage C2PA allows (documentSigning or emailProtection)")
    elif ExtendedKeyUsageOID.ANY_EXTENDED_KEY_USAGE in ekus:
        problems.append("anyExtendedKeyUsage is not allowed")
    return problems


def _extension(certificate: x509.Certificate, kind: type) -> object | None:
    try:
        return certificate.extensions.get_extension_for_class(kind).value
    except x509.ExtensionNotFound:
        return None
    except ValueError:  # a duplicated or malformed extension
        return None


def _ca_builder(public_key: PublicKey, *, subject: x509.Name, issuer: x509.Name, validity: Validity,
                path_length: int) -> x509.CertificateBuilder:
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(validity.not_before)
        .not_valid_after(validity.not_after)
        .add_extension(x509.BasicConstraints(ca=True, path_length=path_length), critical=True)
        .add_extension(_key_usage(key_cert_sign=True, crl_sign=True, digital_signature=True), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(public_key), critical=False)
    )


def _aki(issuer: x509.Certificate) -> x509.AuthorityKeyIdentifier:
    ski = _extension(issuer, x509.SubjectKeyIdentifier)
    if ski is not None:
        return x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ski)
    return x509.AuthorityKeyIdentifier.from_issuer_public_key(issuer.public_key())


def _key_usage(*, digital_signature: bool = False, key_cert_sign: bool = False,
               crl_sign: bool = False) -> x509.KeyUsage:
    return x509.KeyUsage(digital_signature=digital_signature, content_commitment=False, key_encipherment=False,
                         data_encipherment=False, key_agreement=False, key_cert_sign=key_cert_sign,
                         crl_sign=crl_sign, encipher_only=False, decipher_only=False)


def _within(validity: Validity, issuer: x509.Certificate) -> Validity:
    # A certificate never outlives its issuer: validators reject a chain where it does at that time anyway.
    return Validity(max(validity.not_before, issuer.not_valid_before_utc),
                    min(validity.not_after, issuer.not_valid_after_utc))


def _sign(builder: x509.CertificateBuilder, private_key: SigningKey) -> x509.Certificate:
    # ML-DSA signs the whole TBSCertificate itself (no separate digest); ECDSA with SHA-256 or SHA-384 by curve.
    if isinstance(private_key, MLDSA65PrivateKey):
        return builder.sign(private_key, None)
    digest = hashes.SHA384() if private_key.curve.key_size >= 384 else hashes.SHA256()
    return builder.sign(private_key, digest)


def _bounded(text: str) -> str:
    text = " ".join(str(text).split())[:NAME_MAX_CHARS].strip()
    return text or "unnamed"


def validity_from(start: datetime, days: int) -> Validity:
    """`days` of validity starting an hour before `start`, so a verifier's slightly slow clock still accepts it."""
    return Validity(start - timedelta(hours=1), start + timedelta(days=days))
