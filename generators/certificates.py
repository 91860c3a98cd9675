"""Generators' C2PA signing credentials: per key, an ML-DSA-65 end-entity certificate for the key's own
public key and, for hybrid generators, an ES256 one with its P-256 key, both from the deployment CA
(generators/certificate_authority.py), issued on first need and stored; or the organization's own uploaded
ES256 chain and key for one generator.

Issuing locks the key's row, so concurrent first use issues once. A stored certificate is issued again
when it is near its end or when a newer intermediate of its family issues.

With a signer service (SIGNER_SOCKET) this process holds no key-encryption key: the signer issues the
certificates (`issue-certificates`, which runs `key_certificates_issue` there and writes the row) and seals
an uploaded key (`seal-secret`); this process reads the rows and never sees an unsealed private key.
"""

import base64
import hashlib
import logging
import uuid
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.mldsa import MLDSA65PublicKey
from django.db import transaction
from django.utils import timezone

from audit.services import audit_write
from core.errors import (
    RETRY_AFTER_UNAVAILABLE,
    Forbidden,
    GeneratorClientManaged,
    KeyUnavailable,
    NotFound,
    ServiceUnavailable,
    ValidationFailed,
)
from core.keyring import private_key_sealing_ring
from core.sealing import SealedBlobError, seal, sealed_key_id, unseal
from core.signer_client import SignerRefused, signer_call, signer_configured
from generators import certificate_authority as authority
from generators.models import (
    CertificateAuthority,
    Generator,
    GeneratorCertificate,
    GeneratorKey,
    GeneratorUploadedCertificate,
)
from record_format import certificates as certs

logger = logging.getLogger(__name__)

END_ENTITY_DAYS = 365
Family = CertificateAuthority.Family


@dataclass(frozen=True)
class C2paCredentials:
    signing: str                      # generator.c2pa_signing: "ml-dsa-65" or "hybrid"
    ml_dsa_chain: tuple[bytes, ...]   # DER, end-entity first (the key's ML-DSA-65 cert), no root
    es256_chain: tuple[bytes, ...]    # DER, end-entity first, no root; () when not hybrid
    es256_private_key: ec.EllipticCurvePrivateKey | None  # unsealed; None when not hybrid


def generator_c2pa_credentials(key: GeneratorKey, *, private_key: bool = True) -> C2paCredentials:
    """The certificate chains (and ES256 key) a C2PA signature by `key` carries, issuing what is missing.

    An ES256 chain only for a hybrid server-managed generator: its uploaded one when there is one not yet
    expired, else the deployment CA's. Without `private_key` (the signer service signs), the ES256 key is
    left sealed and `es256_private_key` is None; with a signer service configured it must be without.
    Raises KeyUnavailable (503) when a sealed key does not unseal, ServiceUnavailable when the signer
    cannot issue.
    """
    if private_key and signer_configured():
        raise ValueError("the signer service holds the ES256 keys: ask for credentials without private_key")
    generator = key.generator
    hybrid = _is_hybrid(generator)
    upload = _live_upload(generator) if hybrid else None
    stored = key_certificates_ensure(key, es256=hybrid and upload is None)
    ml_dsa_chain = (bytes(stored.ml_dsa_certificate), *authority.issuer_chain(stored.ml_dsa_issuer))
    if not hybrid:
        return C2paCredentials(generator.c2pa_signing, ml_dsa_chain, (), None)
    if upload is not None:
        chain = tuple(base64.b64decode(der) for der in upload.chain)
        sealed, context = upload.encrypted_private_key, _upload_context(generator.pk)
    else:
        chain = (bytes(stored.es256_certificate), *authority.issuer_chain(stored.es256_issuer))
        sealed, context = stored.encrypted_es256_private_key, _es256_context(key.pk)
    return C2paCredentials(generator.c2pa_signing, ml_dsa_chain, chain,
                           _unseal_ec(sealed, context) if private_key else None)


@dataclass(frozen=True)
class Es256Key:
    """The ES256 key a hybrid claim is signed with: unsealed (`private_key`), or where a signer backend
    holds it (`backend`, `reference`)."""

    backend: str
    reference: str = ""
    private_key: ec.EllipticCurvePrivateKey | None = None


def generator_es256_key(key: GeneratorKey) -> Es256Key:
    """The ES256 key a hybrid C2PA claim signature by `key` uses: the organization's live upload, else the
    key's certificate's (sealed, or in the backend `signer_migrate_keys` moved it to), read once with its
    location and without building chains; issued here (`key_certificates_issue`) only when the key has none
    yet, so only where the keys are held. Raises KeyUnavailable (503) when a sealed one does not unseal."""
    upload = _live_upload(key.generator)
    if upload is not None:
        return Es256Key("sealed", private_key=_unseal_ec(upload.encrypted_private_key,
                                                         _upload_context(key.generator_id)))
    row = (GeneratorCertificate.objects.filter(key_id=key.pk)
           .values_list("encrypted_es256_private_key", "es256_key_backend", "es256_key_reference").first())
    sealed, backend, reference = row if row is not None else (None, "sealed", "")
    # A blob beside a backend is newer than the key the backend holds: a certificate issued again after its
    # key moved (moving clears the blob in the UPDATE that records the backend).
    if sealed is None and backend != "sealed":
        return Es256Key(backend, reference)
    if sealed is None:
        sealed = key_certificates_issue(key, es256=True).encrypted_es256_private_key
    return Es256Key("sealed", private_key=_unseal_ec(sealed, _es256_context(key.pk)))


def certificate_es256_private_key(row: GeneratorCertificate) -> ec.EllipticCurvePrivateKey:
    """The sealed ES256 key of a generator key's certificate row, unsealed (signer_migrate_keys). Raises
    SealedBlobError when it does not unseal."""
    der = unseal(bytes(row.encrypted_es256_private_key), private_key_sealing_ring().keys,
                 associated_data=_es256_context(row.pk))
    return certs.ec_private_key_from_der(der)


def signing_trust_anchors() -> list[bytes]:
    """The roots a manifest signer's certificate chain must reach here (verification): no TSA roots."""
    return authority.signing_roots()


def trust_anchor_certificates() -> list[bytes]:
    """DER roots a validator should trust: the service's roots (both families), an installed CA's root
    when one was given, and the time-stamp authority's roots (core.tsa.tsa_roots())."""
    return authority.trust_anchors()


def key_certificates_ensure(key: GeneratorKey, *, es256: bool) -> GeneratorCertificate:
    """The key's stored certificates, issuing the ML-DSA-65 one (and the ES256 one with `es256`) when
    missing, near their end, or from an intermediate that no longer issues: by the signer service when one
    is configured, else here. Raises ServiceUnavailable; with a signer, NotFound (a revoked generator, or
    a retired key) and Forbidden (another organization's)."""
    if signer_configured():
        return _certificates_through_signer(key, es256=es256)
    return key_certificates_issue(key, es256=es256)


def key_certificates_issue(key: GeneratorKey, *, es256: bool) -> GeneratorCertificate:
    """`key_certificates_ensure` done in this process, which signs with the CA keys and seals the new ES256
    key: only where the key-encryption key is (the signer service, or a process without one)."""
    issuers = {Family.ML_DSA_65: authority.issuer_ensure(Family.ML_DSA_65)}
    if es256:
        issuers[Family.ES256] = authority.issuer_ensure(Family.ES256)
    stored = _stored(key.pk)
    if stored is not None and not _stale(stored, issuers):
        return stored
    with transaction.atomic():
        # The key's row lock serializes concurrent first use: the second caller finds the first's certificates.
        GeneratorKey.objects.select_for_update().filter(pk=key.pk).first()
        stored, _ = GeneratorCertificate.objects.get_or_create(key=key)
        stored = _stored(key.pk)
        if _needs(stored.ml_dsa_certificate, stored.ml_dsa_issuer_id, issuers[Family.ML_DSA_65]):
            _issue_ml_dsa(stored, key, issuers[Family.ML_DSA_65])
        if es256 and _needs(stored.es256_certificate, stored.es256_issuer_id, issuers[Family.ES256]):
            _issue_es256(stored, key, issuers[Family.ES256])
    return _stored(key.pk)


def generator_wants_es256(generator: Generator) -> bool:
    """Whether the deployment CA issues this generator's keys an ES256 certificate: hybrid, server-managed,
    and no live upload of the organization's own."""
    return _is_hybrid(generator) and not _has_upload(generator)


def upload_key_seal(generator_id: uuid.UUID, key_der: bytes) -> bytes:
    """An uploaded ES256 key (PKCS#8 DER) sealed under the newest key-encryption key, bound to the generator's
    upload: only where the key-encryption key is (the signer service's `seal-secret`, or without one)."""
    return _seal(key_der, _upload_context(generator_id))


def upload_context_generator(context: str) -> uuid.UUID | None:
    """The generator whose upload `context` names (`c2pa-upload:<generator id>`), None for any other context."""
    prefix, _, generator_id = context.partition(":")
    if prefix != "c2pa-upload":
        return None
    try:
        parsed = uuid.UUID(generator_id)
    except ValueError:
        return None
    return parsed if _upload_context(parsed).decode() == context else None


def public_key_certificates(generator: Generator) -> dict[str, dict[str, list[str]]]:
    """Per kid, the PEM chains (end entity first, no root) shown on the public keys route: {"ml-dsa-65":
    [...], "es256": [...]} (es256 for hybrid generators). The current key of an active generator gets its
    certificates issued once; other keys show what is stored."""
    current = [k for k in generator.keys.all() if k.retired_at is None]
    hybrid = _is_hybrid(generator)
    upload = _live_upload(generator) if hybrid else None
    if current and not generator.is_revoked:
        key_certificates_ensure(current[0], es256=hybrid and upload is None)  # generator_wants_es256, read once
    stored = {c.key_id: c for c in GeneratorCertificate.objects.filter(key__generator=generator).select_related(
        "ml_dsa_issuer", "es256_issuer")}
    shown: dict[str, dict[str, list[str]]] = {}
    for key in generator.keys.all():
        chains = _chains_of(stored.get(key.pk), hybrid=hybrid)
        if upload is not None and key.retired_at is None:
            chains[Family.ES256] = [certs.der_to_pem(base64.b64decode(der)) for der in upload.chain]
        shown[key.kid] = chains
    return shown


def generator_c2pa_certificate_upload(*, generator: Generator, chain_pem: list[str], key_pem: str,
                                      actor: str | None = None) -> GeneratorUploadedCertificate:
    """Use the organization's own ES256 chain and key for this generator's hybrid C2PA signatures.

    Checks: a P-256 key matching the leaf, a leaf that passes the C2PA profile, each certificate issued by
    the next, none expired. Replaces an earlier upload. Writes audit `generator.c2pa_certificate_uploaded`.
    Raises ValidationFailed (with details), GeneratorClientManaged, NotFound (revoked).
    """
    if not generator.is_server_managed:
        raise GeneratorClientManaged("Only a server-managed generator signs C2PA manifests with the service.")
    chain, key = _validated_upload(chain_pem, key_pem)
    kept = [c for c in chain if not (len(chain) > 1 and certs.is_self_signed(c))]  # x5chain carries no root
    # Sealed before the row lock: with a signer service this is a round trip, not to be made holding a lock.
    sealed = _upload_key_sealed(generator, certs.ec_private_key_der(key))
    with transaction.atomic():
        locked = Generator.objects.select_for_update().get(pk=generator.pk)
        if locked.is_revoked:
            raise NotFound("This generator is revoked.")
        GeneratorUploadedCertificate.objects.filter(generator=locked).delete()
        upload = GeneratorUploadedCertificate.objects.create(
            generator=locked, chain=[base64.b64encode(certs.to_der(c)).decode() for c in kept],
            encrypted_private_key=sealed,
            not_after=min(c.not_valid_after_utc for c in kept))
        audit_write(org=locked.org, type="generator.c2pa_certificate_uploaded",
                    metadata={"generator_id": str(locked.pk), **_describe(chain[0]), **_actor(actor)})
    return upload


def generator_c2pa_certificate_remove(*, generator: Generator, actor: str | None = None) -> bool:
    """Go back to the deployment CA's certificates. Idempotent: False when there was no upload.

    Writes audit `generator.c2pa_certificate_removed` when one was removed.
    """
    with transaction.atomic():
        deleted, _ = GeneratorUploadedCertificate.objects.filter(generator=generator).delete()
        if deleted:
            audit_write(org=generator.org, type="generator.c2pa_certificate_removed",
                        metadata={"generator_id": str(generator.pk), **_actor(actor)})
    return bool(deleted)


def c2pa_secret_reseal(*, model: type, pk: uuid.UUID) -> bool:
    """Seal one C2PA private key (a CA's, a key's ES256 one, an upload's) again under the newest
    KEY_ENCRYPTION_KEY id, its row locked (as generator_key_reseal does for ML-DSA seeds).

    Returns False when there was nothing to do. Raises SealedBlobError when the blob does not unseal.
    """
    column, context = _SEALED_COLUMNS[model]
    ring = private_key_sealing_ring()
    with transaction.atomic():
        row = model.objects.select_for_update().filter(pk=pk, **{f"{column}__isnull": False}).first()
        if row is None or sealed_key_id(bytes(getattr(row, column))) == ring.newest_id:
            return False
        secret = unseal(bytes(getattr(row, column)), ring.keys, associated_data=context(pk))
        model.objects.filter(pk=pk).update(**{column: _seal(secret, context(pk))})
    return True


def trust_anchor_summaries() -> list[dict]:
    """The trust anchors as the route shows them, each with its `use`: `signing` (manifest signers chain
    to it) or `time-stamping` (a time-stamp authority's root, trusted for stamps only)."""
    anchors = trust_anchor_certificates()  # first: it makes the CA on first need
    signing = set(authority.signing_roots())
    return [{**certificate_summary(der), "use": "signing" if der in signing else "time-stamping"} for der in anchors]


def certificate_summary(der: bytes) -> dict:
    """What the routes show of a certificate: PEM, subject, algorithm, validity and SHA-256 fingerprint."""
    certificate = certs.load_der(der)
    return {"certificate": certs.der_to_pem(der), "subject": certificate.subject.rfc4514_string(),
            "algorithm": certs.algorithm_name(certificate), "not_before": certificate.not_valid_before_utc,
            "not_after": certificate.not_valid_after_utc, "sha256": hashlib.sha256(der).hexdigest()}


def _certificates_through_signer(key: GeneratorKey, *, es256: bool) -> GeneratorCertificate:
    families = [Family.ML_DSA_65, Family.ES256] if es256 else [Family.ML_DSA_65]
    issuers = {family: authority.usable_issuer(family) for family in families}
    stored = _stored(key.pk)
    if stored is not None and None not in issuers.values() and not _stale(stored, issuers):
        return stored
    _signer_answer("issue-certificates", org_id=str(key.generator.org_id), generator_id=str(key.generator_id),
                   kid=key.kid)
    stored = _stored(key.pk)
    if stored is None or stored.ml_dsa_certificate is None or (es256 and stored.es256_certificate is None):
        raise ServiceUnavailable("The signing service issued no certificate; nothing was signed.",
                                 headers={"Retry-After": str(RETRY_AFTER_UNAVAILABLE)})
    return stored


def _upload_key_sealed(generator: Generator, key_der: bytes) -> bytes:
    if not signer_configured():
        return upload_key_seal(generator.pk, key_der)
    answer = _signer_answer("seal-secret", org_id=str(generator.org_id), generator_id=str(generator.pk),
                            args={"context": _upload_context(generator.pk).decode(), "secret": key_der})
    if not isinstance(answer.get("sealed"), bytes):
        raise ServiceUnavailable("The signing service sealed nothing; nothing was stored.",
                                 headers={"Retry-After": str(RETRY_AFTER_UNAVAILABLE)})
    return answer["sealed"]


# The signer's refusals of certificate work, as the API's errors (the routes check the same things first).
_REFUSALS = {"not_found": NotFound, "revoked": NotFound, "forbidden": Forbidden}


def _signer_answer(op: str, **fields) -> dict:
    try:
        return signer_call(op, **fields)
    except SignerRefused as refused:
        error = _REFUSALS.get(refused.error)
        if error is not None:
            raise error(f"The signing service refused: {refused.detail}.") from None
        raise ServiceUnavailable(f"The signing service could not do it: {refused.detail}.",
                                 headers={"Retry-After": str(RETRY_AFTER_UNAVAILABLE)}) from None


def _stored(key_pk: uuid.UUID) -> GeneratorCertificate | None:
    return GeneratorCertificate.objects.select_related("ml_dsa_issuer", "es256_issuer").filter(key_id=key_pk).first()


def _stale(stored: GeneratorCertificate, issuers: dict[str, CertificateAuthority]) -> bool:
    held = {Family.ML_DSA_65: (stored.ml_dsa_certificate, stored.ml_dsa_issuer_id),
            Family.ES256: (stored.es256_certificate, stored.es256_issuer_id)}
    return any(_needs(*held[family], issuer) for family, issuer in issuers.items())


def _needs(der: bytes | None, issuer_id: uuid.UUID | None, issuer: CertificateAuthority) -> bool:
    if der is None or issuer_id != issuer.pk:
        return True
    return certs.load_der(der).not_valid_after_utc <= timezone.now() + authority.RENEW_BEFORE


def _issue_ml_dsa(stored: GeneratorCertificate, key: GeneratorKey, issuer: CertificateAuthority) -> None:
    public_key = MLDSA65PublicKey.from_public_bytes(bytes(key.public_key))
    stored.ml_dsa_certificate = _end_entity(public_key, key, issuer)
    stored.ml_dsa_issuer = issuer
    stored.updated_at = timezone.now()
    stored.save(update_fields=["ml_dsa_certificate", "ml_dsa_issuer", "updated_at"])


def _issue_es256(stored: GeneratorCertificate, key: GeneratorKey, issuer: CertificateAuthority) -> None:
    # A fresh P-256 key with each certificate: nothing signed under the old one needs it again.
    private_key = ec.generate_private_key(ec.SECP256R1())
    stored.es256_certificate = _end_entity(private_key.public_key(), key, issuer)
    stored.es256_issuer = issuer
    stored.encrypted_es256_private_key = _seal(certs.ec_private_key_der(private_key), _es256_context(key.pk))
    # The new key is sealed here, whatever backend held the previous one (signer_migrate_keys moves it again).
    stored.es256_key_backend, stored.es256_key_reference = "sealed", ""
    stored.updated_at = timezone.now()
    stored.save(update_fields=["es256_certificate", "es256_issuer", "encrypted_es256_private_key", "es256_key_backend",
                               "es256_key_reference", "updated_at"])


def _end_entity(public_key: certs.PublicKey, key: GeneratorKey, issuer: CertificateAuthority) -> bytes:
    generator = key.generator
    name = certs.subject_name(organization=generator.org.name, common_name=generator.name)
    certificate = certs.build_end_entity(public_key, name=name, issuer=certs.load_der(issuer.certificate),
                                         issuer_key=authority.ca_private_key(issuer),
                                         validity=certs.validity_from(timezone.now(), END_ENTITY_DAYS))
    return certs.to_der(certificate)


def _chains_of(stored: GeneratorCertificate | None, *, hybrid: bool) -> dict[str, list[str]]:
    chains: dict[str, list[str]] = {}
    if stored is not None and stored.ml_dsa_certificate is not None:
        chains[Family.ML_DSA_65] = _pems(stored.ml_dsa_certificate, stored.ml_dsa_issuer)
    if hybrid and stored is not None and stored.es256_certificate is not None:
        chains[Family.ES256] = _pems(stored.es256_certificate, stored.es256_issuer)
    return chains


def _pems(der: bytes, issuer: CertificateAuthority) -> list[str]:
    return [certs.der_to_pem(d) for d in (bytes(der), *authority.issuer_chain(issuer))]


def _has_upload(generator: Generator) -> bool:
    return _live_upload(generator) is not None


def _is_hybrid(generator: Generator) -> bool:
    # Hybrid signing is the service's ES256 key beside the ML-DSA-65 one: only where the service holds keys.
    return generator.c2pa_signing == Generator.C2paSigning.HYBRID and generator.is_server_managed


def _live_upload(generator: Generator) -> GeneratorUploadedCertificate | None:
    # An expired upload would make every signature fail: the deployment's certificates sign until a new one.
    return GeneratorUploadedCertificate.objects.filter(generator=generator, not_after__gt=timezone.now()).first()


def _validated_upload(chain_pem: list[str], key_pem: str) -> tuple[list[x509.Certificate], ec.EllipticCurvePrivateKey]:
    try:
        chain = [c for pem in chain_pem for c in certs.load_pem_chain(pem)]
    except certs.CertificateError:
        raise ValidationFailed(details={"certificate_chain": ["Not PEM certificates."]}) from None
    try:
        key = certs.load_pem_ec_private_key(key_pem)
    except certs.CertificateError:
        raise ValidationFailed(details={"private_key": ["Not an unencrypted PEM EC private key."]}) from None
    problems = _upload_problems(chain, key)
    if problems:
        raise ValidationFailed(details=problems)
    return chain, key


def _upload_problems(chain: list[x509.Certificate], key: ec.EllipticCurvePrivateKey) -> dict[str, list[str]]:
    if not chain or len(chain) > certs.MAX_CHAIN_LENGTH:
        return {"certificate_chain": [f"Send 1 to {certs.MAX_CHAIN_LENGTH} certificates, the end entity first."]}
    leaf, now = chain[0], timezone.now()
    if not isinstance(key.curve, ec.SECP256R1):
        return {"private_key": ["ES256 needs a P-256 (secp256r1) key."]}
    if not certs.same_public_key(leaf.public_key(), key.public_key()):
        return {"private_key": ["The key does not match the first certificate."]}
    problems = certs.end_entity_problems(leaf, now)
    if certs.is_self_signed(leaf):
        problems.append("self-signed; send a certificate issued by a CA, with that CA's chain")
    if problems:
        return {"certificate_chain": [f"The first certificate fails the C2PA profile: {p}." for p in problems]}
    # The chain's own last certificate stands in as its anchor: whether that is trusted is the validator's call.
    check = certs.verify_chain([certs.to_der(c) for c in chain], [certs.to_der(chain[-1])], now)
    if not check.trusted:
        return {"certificate_chain": [f"The chain does not check: {check.problem}."]}
    return {}


def _describe(leaf: x509.Certificate) -> dict:
    return {"subject": leaf.subject.rfc4514_string(), "serial": format(leaf.serial_number, "x"),
            "sha256": hashlib.sha256(certs.to_der(leaf)).hexdigest()}


def _actor(actor: str | None) -> dict:
    return {"actor_id": actor} if actor else {}


def _seal(secret: bytes, context: bytes) -> bytes:
    ring = private_key_sealing_ring()
    return seal(secret, ring.newest_key, key_id=ring.newest_id, associated_data=context)


def _unseal_ec(blob: bytes, context: bytes) -> ec.EllipticCurvePrivateKey:
    try:
        return certs.ec_private_key_from_der(unseal(bytes(blob), private_key_sealing_ring().keys,
                                                    associated_data=context))
    except (SealedBlobError, TypeError) as error:
        logger.error("a C2PA ES256 private key (%s) does not unseal: %s", context.decode(), error)
        raise KeyUnavailable() from None


def _es256_context(key_pk: uuid.UUID) -> bytes:
    # Each sealed key bound to its row and purpose: never unseals as a generator's ML-DSA seed or a CA key.
    return f"c2pa-es256:{key_pk}".encode()


def _upload_context(generator_id: uuid.UUID) -> bytes:
    return f"c2pa-upload:{generator_id}".encode()


# Every sealed C2PA private key: (column, the associated data of a row by primary key), for c2pa_secret_reseal.
_SEALED_COLUMNS = {
    CertificateAuthority: ("encrypted_private_key", authority.sealing_context),
    GeneratorCertificate: ("encrypted_es256_private_key", _es256_context),
    GeneratorUploadedCertificate: ("encrypted_private_key", _upload_context),
}
