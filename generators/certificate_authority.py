"""The deployment's C2PA certificate authorities: made on first need, rotated by `manage.py c2pa_ca rotate`,
or replaced for classical certificates by an installed intermediate (`manage.py c2pa_ca install`).

Everything lives in the database, private keys sealed like generators' (core/sealing.py), so every process
sees the same CA. With a signer service (SIGNER_SOCKET) only the signer holds the key-encryption key: a
process that finds no usable CA asks it (`ensure-authorities`), which makes them with `issuer_ensure`.

Two families: `es256` (root ECDSA P-384, intermediate P-256) and `ml-dsa-65`. The newest
intermediate of a family with time left issues new end-entity certificates; older ones stay, so the
certificates they issued keep verifying until they expire.
"""

import base64
import logging
import uuid
from datetime import datetime, timedelta

from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec
from django.db import IntegrityError, transaction
from django.db.models import Max
from django.utils import timezone

from core.errors import RETRY_AFTER_UNAVAILABLE, KeyUnavailable, ServiceUnavailable
from core.keyring import private_key_sealing_ring
from core.sealing import SealedBlobError, seal, unseal
from core.signer_client import SignerRefused, signer_call, signer_configured
from core.tsa import tsa_roots
from generators.models import CertificateAuthority
from record_format import certificates as certs
from record_format import crypto

logger = logging.getLogger(__name__)

Family, Kind, Origin = CertificateAuthority.Family, CertificateAuthority.Kind, CertificateAuthority.Origin

CA_ORGANIZATION = "Content Provenance Service"
ROOT_DAYS = 20 * 365
INTERMEDIATE_DAYS = 5 * 365
# An intermediate (or end-entity certificate) this close to its end is replaced before it is used again.
RENEW_BEFORE = timedelta(days=30)


class CaInstallError(ValueError):
    """An installed chain or key that cannot issue certificates (the message says why)."""


def current_issuer(family: str) -> CertificateAuthority:
    """The intermediate that issues new end-entity certificates of `family`, made on first need: by the
    signer service when one is configured, else here (`issuer_ensure`). Raises ServiceUnavailable (503)
    when the signer cannot be reached or made none, KeyUnavailable when a root's key does not unseal."""
    found = _newest_usable(family)
    if found is not None:
        return found
    if not signer_configured():
        return issuer_ensure(family)
    authorities_ensure_through_signer()
    found = _newest_usable(family)
    if found is None:
        raise ServiceUnavailable("The signing service made no certificate authority; nothing was signed.",
                                 headers={"Retry-After": str(RETRY_AFTER_UNAVAILABLE)})
    return found


def usable_issuer(family: str) -> CertificateAuthority | None:
    """The intermediate that issues new certificates of `family`, if there is one with time left. Makes nothing."""
    return _newest_usable(family)


def authorities_ensure() -> list[CertificateAuthority]:
    """Each family's issuing intermediate, made here (with a root when none is usable) where none is: only
    where the key-encryption key is (the signer service, or a process without one)."""
    return [issuer_ensure(family) for family in Family.values]


def authorities_ensure_through_signer() -> None:
    """Ask the signer service to make the CAs that are missing. Raises ServiceUnavailable (503)."""
    try:
        signer_call("ensure-authorities")
    except SignerRefused as refused:
        raise ServiceUnavailable(f"The signing service could not make a certificate authority: {refused.detail}.",
                                 headers={"Retry-After": str(RETRY_AFTER_UNAVAILABLE)}) from None


def issuer_ensure(family: str) -> CertificateAuthority:
    """`current_issuer` made in this process, which seals the new CA keys. Concurrent first use makes one:
    the new rows take the generations after those seen before looking, so a second maker collides on the
    unique generation and reads the first's."""
    found = _newest_usable(family)
    if found is not None:
        return found
    seen = _generations(family)
    found = _newest_usable(family)  # looked at again after `seen`: a CA committed in between is found here
    if found is not None:
        return found
    try:
        with transaction.atomic():
            return _make_intermediate(family, new_root=False, seen=seen)
    except IntegrityError:
        found = _newest_usable(family)
        if found is None:
            raise
        return found


def ca_rotate(*, new_root: bool = False) -> list[CertificateAuthority]:
    """A new service intermediate in each family (and a new root first with `new_root`). Returns them.

    Raises IntegrityError when another rotation ran at the same moment (run it again).
    """
    with transaction.atomic():
        return [_make_intermediate(family, new_root=new_root, seen=_generations(family)) for family in Family.values]


def ca_install(*, chain_pem: str, key_pem: str) -> CertificateAuthority:
    """Install an intermediate from another CA (a C2PA trust-listed one) to issue ES256 certificates.

    `chain_pem`: the intermediate first, then its issuers, up to and including its root or not. Checks
    that it is an ECDSA CA with keyCertSign, the key matches, each certificate is issued by the next and
    all are valid now. Raises CaInstallError.
    """
    chain, key = _parse_install(chain_pem, key_pem)
    now = timezone.now()
    problem = _install_problem(chain, key, now)
    if problem:
        raise CaInstallError(problem)
    root = chain[-1] if len(chain) > 1 and certs.is_self_signed(chain[-1]) else None
    between = chain[1:-1] if root is not None else chain[1:]
    with transaction.atomic():
        parent = _insert(Family.ES256, Kind.ROOT, root, None, origin=Origin.INSTALLED) if root else None
        return _insert(Family.ES256, Kind.INTERMEDIATE, chain[0], key, origin=Origin.INSTALLED, parent=parent,
                       chain=[base64.b64encode(certs.to_der(c)).decode() for c in between])


def issuer_chain(ca: CertificateAuthority) -> tuple[bytes, ...]:
    """DER of an intermediate and the CAs above it, without the root: what follows an end entity in x5chain."""
    return (bytes(ca.certificate), *(base64.b64decode(der) for der in ca.chain))


def ca_private_key(ca: CertificateAuthority) -> certs.SigningKey:
    """The unsealed signing key of a CA. Raises KeyUnavailable (503) when it does not unseal."""
    try:
        secret = unseal(bytes(ca.encrypted_private_key), private_key_sealing_ring().keys,
                        associated_data=sealing_context(ca.pk))
    except (SealedBlobError, TypeError) as error:
        logger.error("the private key of C2PA CA %s does not unseal: %s", ca.pk, error)
        raise KeyUnavailable() from None
    if ca.family == Family.ML_DSA_65:
        return crypto.private_key_from_seed(secret)
    return certs.ec_private_key_from_der(secret)


def trust_anchors() -> list[bytes]:
    """DER roots a validator should trust: the signing roots (`signing_roots`), then the time-stamp
    authority's roots. Makes the CA on first need."""
    for family in Family.values:
        current_issuer(family)
    found = signing_roots()
    return found + [der for der in tsa_roots() if der not in found]


def signing_roots() -> list[bytes]:
    """DER roots of the service's and installed CAs not yet expired: what a claim signer's chain must reach
    (never a time-stamp authority's root, which vouches for stamps only). One query; makes nothing."""
    roots = CertificateAuthority.objects.filter(kind=Kind.ROOT, not_after__gt=timezone.now()).order_by(
        "family", "generation")
    return [bytes(root.certificate) for root in roots]


def _newest_usable(family: str) -> CertificateAuthority | None:
    return (CertificateAuthority.objects.filter(family=family, kind=Kind.INTERMEDIATE,
                                                not_after__gt=timezone.now() + RENEW_BEFORE)
            .order_by("-generation").first())


def _make_intermediate(family: str, *, new_root: bool, seen: dict[str, int]) -> CertificateAuthority:
    root = None if new_root else _usable_root(family)
    if root is None:
        root_key, generation = _new_key(family, root=True), seen[Kind.ROOT] + 1
        name = _ca_name(family, "Root", generation)
        validity = certs.validity_from(timezone.now(), ROOT_DAYS)
        root = _insert(family, Kind.ROOT, certs.build_root(root_key, name=name, validity=validity), root_key,
                       origin=Origin.SERVICE, generation=generation)
    key, generation = _new_key(family, root=False), seen[Kind.INTERMEDIATE] + 1
    certificate = certs.build_intermediate(key.public_key(), name=_ca_name(family, "Intermediate", generation),
                                           issuer=certs.load_der(root.certificate), issuer_key=ca_private_key(root),
                                           validity=certs.validity_from(timezone.now(), INTERMEDIATE_DAYS))
    return _insert(family, Kind.INTERMEDIATE, certificate, key, origin=Origin.SERVICE, parent=root,
                   generation=generation)


def _usable_root(family: str) -> CertificateAuthority | None:
    # A root must outlive the intermediate it signs by a margin, or the new intermediate would be cut short.
    return (CertificateAuthority.objects.filter(family=family, kind=Kind.ROOT, origin=Origin.SERVICE,
                                                not_after__gt=timezone.now() + timedelta(days=INTERMEDIATE_DAYS))
            .order_by("-generation").first())


def _insert(family: str, kind: str, certificate: x509.Certificate, key: certs.SigningKey | None, *,
            origin: str, parent: CertificateAuthority | None = None, chain: list[str] | None = None,
            generation: int | None = None) -> CertificateAuthority:
    ca_id = uuid.uuid4()
    return CertificateAuthority.objects.create(
        id=ca_id, family=family, kind=kind, origin=origin, generation=generation or _generations(family)[kind] + 1,
        certificate=certs.to_der(certificate), chain=chain or [], parent=parent,
        encrypted_private_key=_seal(key, ca_id) if key is not None else None,
        not_after=certificate.not_valid_after_utc)


def _generations(family: str) -> dict[str, int]:
    """The highest generation of each kind of the family so far (0 when none)."""
    rows = CertificateAuthority.objects.filter(family=family).values("kind").annotate(n=Max("generation"))
    return {Kind.ROOT: 0, Kind.INTERMEDIATE: 0, **{row["kind"]: row["n"] for row in rows}}


def _new_key(family: str, *, root: bool) -> certs.SigningKey:
    if family == Family.ML_DSA_65:
        return crypto.private_key_from_seed(crypto.generate_keypair()[0])
    return ec.generate_private_key(ec.SECP384R1() if root else ec.SECP256R1())


def _seal(key: certs.SigningKey, ca_id: uuid.UUID) -> bytes:
    secret = key.private_bytes_raw() if not isinstance(key, ec.EllipticCurvePrivateKey) else (
        certs.ec_private_key_der(key))
    ring = private_key_sealing_ring()
    return seal(secret, ring.newest_key, key_id=ring.newest_id, associated_data=sealing_context(ca_id))


def sealing_context(ca_id: uuid.UUID) -> bytes:
    """The associated data a CA's sealed key is bound to."""
    # Its own context: a CA key's blob never unseals as a generator's key, nor as another CA's.
    return f"c2pa-ca:{ca_id}".encode()


def _ca_name(family: str, role: str, generation: int) -> x509.Name:
    # The generation in the name: a validator tells a rotated CA from the one before by name too.
    label = "ES256" if family == Family.ES256 else "ML-DSA-65"
    return certs.subject_name(organization=CA_ORGANIZATION, common_name=f"C2PA {label} {role} CA G{generation}")


def _parse_install(chain_pem: str, key_pem: str) -> tuple[list[x509.Certificate], ec.EllipticCurvePrivateKey]:
    try:
        return certs.load_pem_chain(chain_pem), certs.load_pem_ec_private_key(key_pem)
    except certs.CertificateError as error:
        raise CaInstallError(str(error)) from None


def _install_problem(chain: list[x509.Certificate], key: ec.EllipticCurvePrivateKey, now: datetime) -> str | None:
    if len(chain) > certs.MAX_CHAIN_LENGTH:
        return f"the chain has more than {certs.MAX_CHAIN_LENGTH} certificates"
    first = chain[0]
    if not certs.is_ca(first):
        return "the first certificate is not a CA (BasicConstraints ca=True)"
    usage = _key_usage(first)
    if usage is not None and not usage.key_cert_sign:
        return "the first certificate may not sign certificates (no KeyUsage keyCertSign)"
    if not isinstance(first.public_key(), ec.EllipticCurvePublicKey) or not certs.same_public_key(
            first.public_key(), key.public_key()):
        return "the private key does not match the first certificate"
    anchor = chain[-1] if certs.is_self_signed(chain[-1]) else None
    if anchor is None:  # no root given: check the links and dates up to the last certificate
        anchor = chain[-1]
    check = certs.verify_chain([certs.to_der(c) for c in chain], [certs.to_der(anchor)], now)
    if not check.trusted:
        return f"the chain does not check: {check.problem}"
    return None


def _key_usage(certificate: x509.Certificate) -> x509.KeyUsage | None:
    try:
        return certificate.extensions.get_extension_for_class(x509.KeyUsage).value
    except x509.ExtensionNotFound:
        return None
