"""Registering, revoking and rotating generators: one transaction each, audited, announced."""

import base64
import logging
import uuid
from dataclasses import asdict, dataclass, fields

from django.db import transaction
from django.utils import timezone

from accounts.models import Organization
from audit.services import audit_write
from core.errors import RETRY_AFTER_UNAVAILABLE, KeyUnavailable, NotFound, ServiceUnavailable, ValidationFailed
from core.keyring import private_key_sealing_ring
from core.sealing import SealedBlobError, seal, sealed_key_id, unseal
from core.signer_client import SignerRefused, signer_call, signer_configured
from generators.models import Generator, GeneratorKey
from media_codecs import FAMILIES
from media_codecs import label as labels
from media_codecs.disclosure import DEFAULT_SOURCE_TYPE
from record_format import crypto
from webhooks.events import event_emit

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class SuppliedPublicKey:
    kid: str
    algorithm: str
    key: bytes  # raw 1952-byte ML-DSA-65 public key


@dataclass(frozen=True)
class DeclaredDisclosure:
    """What a generator's files disclose, as declared at registration (media_codecs/disclosure.py)."""

    provider_name: str = ""
    system_name: str = ""
    system_version: str = ""
    digital_source_type: str = DEFAULT_SOURCE_TYPE
    label_text: str = labels.DEFAULT_TEXT  # the visible label (media_codecs/label.py)
    label_position: str = labels.POSITIONS[0]
    label_size: float = labels.DEFAULT_SIZE

    @classmethod
    def of(cls, data: dict) -> "DeclaredDisclosure":
        return cls(**{field.name: data[field.name] for field in fields(cls) if field.name in data})


def generator_register(*, org: Organization, name: str, public_key: SuppliedPublicKey | None,
                       supported_formats: list[str] | None = None,
                       c2pa_signing: str = Generator.C2paSigning.ML_DSA_65,
                       disclosure: DeclaredDisclosure = DeclaredDisclosure()) -> Generator:
    """A new generator: client-managed with `public_key`, else server-managed with a fresh keypair.

    Writes audit `key_created`. Raises ValidationFailed for a bad key, format list or C2PA signing mode.
    """
    formats = _valid_formats(supported_formats)
    mode = Generator.Mode.CLIENT if public_key else Generator.Mode.SERVER
    if c2pa_signing not in Generator.C2paSigning.values:
        raise ValidationFailed(details={"c2pa_signing": [f"Choose from {', '.join(Generator.C2paSigning.values)}."]})
    if c2pa_signing == Generator.C2paSigning.HYBRID and mode == Generator.Mode.CLIENT:
        # The ES256 key of a hybrid signature is held by the service, which signs only for server-managed ones.
        raise ValidationFailed(details={"c2pa_signing": ["hybrid needs a server-managed generator (no public_keys)."]})
    with transaction.atomic():
        generator = Generator.objects.create(org=org, name=name, mode=mode, supported_formats=formats,
                                             c2pa_signing=c2pa_signing, **asdict(disclosure))
        key = _add_key(generator, public_key)
        audit_write(org=org, type="key_created",
                    metadata={"generator_id": str(generator.pk), "kid": key.kid, "name": name, "mode": mode})
    return generator


def generator_revoke(*, generator: Generator) -> Generator:
    """Revoke for good: every signature of the generator stops verifying. Idempotent.

    Writes audit `key_revoked` and emits `generator.revoked` the first time only.
    """
    with transaction.atomic():
        revoked = Generator.objects.filter(pk=generator.pk, status=Generator.Status.ACTIVE).update(
            status=Generator.Status.REVOKED, revoked_at=timezone.now())
        if revoked:
            audit_write(org=generator.org, type="key_revoked", metadata={"generator_id": str(generator.pk)})
            event_emit(org=generator.org, kind="generator.revoked", data={"generator_id": str(generator.pk)})
    generator.refresh_from_db()
    return generator


def generator_rotate_key(*, generator: Generator, public_key: SuppliedPublicKey | None) -> GeneratorKey:
    """Retire the current key and make a new one current (addendum section 3).

    Server-managed generators get a fresh keypair (`public_key` must be None); client-managed ones
    must supply the new public key. Old keys stay listed so old records keep verifying. Writes audit
    `key_created`, emits `generator.key_rotated`. Raises NotFound (revoked), ValidationFailed.
    """
    if generator.is_server_managed and public_key is not None:
        raise ValidationFailed("A server-managed generator's keys are made by the service; send no public_key.")
    if not generator.is_server_managed and public_key is None:
        raise ValidationFailed(details={"public_key": ["A client-managed generator needs the new public key."]})
    with transaction.atomic():
        locked = Generator.objects.select_for_update().get(pk=generator.pk)
        if locked.is_revoked:
            raise NotFound("This generator is revoked.")
        old = GeneratorKey.objects.current().filter(generator=locked).first()
        if public_key and GeneratorKey.objects.filter(generator=locked, kid=public_key.kid).exists():
            raise ValidationFailed(details={"public_key": [f"kid {public_key.kid!r} was already used."]})
        GeneratorKey.objects.filter(pk=old.pk).update(retired_at=timezone.now())
        key = _add_key(locked, public_key, backend=old.key_backend if locked.is_server_managed else "")
        data = {"generator_id": str(locked.pk), "kid": key.kid, "previous_kid": old.kid}
        audit_write(org=locked.org, type="key_created", metadata=data)
        event_emit(org=locked.org, kind="generator.key_rotated", data=data)
    return key


def generator_signing_seed(key: GeneratorKey) -> bytes:
    """The decrypted ML-DSA seed of a server-managed generator's key (never stored or logged).

    Raises KeyUnavailable (503) when the sealed seed does not unseal: its KEY_ENCRYPTION_KEY id is no
    longer configured, or the blob is damaged. Logged as an error for the operator.
    """
    try:
        return unseal(bytes(key.encrypted_private_key), private_key_sealing_ring().keys,
                      associated_data=_sealing_context(key.generator_id, key.kid))
    except SealedBlobError as error:
        logger.error("the private key %s of generator %s does not unseal: %s", key.kid, key.generator_id, error)
        raise KeyUnavailable() from None


def generator_key_reseal(*, key_pk: uuid.UUID) -> bool:
    """Seal one server-managed key's private key again under the newest KEY_ENCRYPTION_KEY id.

    One short transaction with the key's row locked, so two runs never both rewrite it and signing
    carries on (a request that read the old blob still unseals it while the old id is configured).
    Returns False when there was nothing to do (already under the newest id, or no such sealed key).
    Raises SealedBlobError (UnknownKeyId among them) when the blob does not unseal; nothing changes then.
    """
    ring = private_key_sealing_ring()
    with transaction.atomic():
        key = GeneratorKey.objects.select_for_update().filter(pk=key_pk, encrypted_private_key__isnull=False).first()
        if key is None or sealed_key_id(key.encrypted_private_key) == ring.newest_id:
            return False
        seed = unseal(bytes(key.encrypted_private_key), ring.keys,
                      associated_data=_sealing_context(key.generator_id, key.kid))
        GeneratorKey.objects.filter(pk=key.pk).update(encrypted_private_key=_seal(seed, key.generator_id, key.kid))
    return True


def decode_public_key(*, kid: str | None, algorithm: str, key_b64: str) -> SuppliedPublicKey:
    """Validate a client-supplied public key (addendum 3: ml-dsa-65, base64 of exactly 1952 bytes)."""
    if algorithm != crypto.ALGORITHM:
        raise ValidationFailed(details={"algorithm": [f"Only {crypto.ALGORITHM} is supported."]})
    try:
        raw = base64.b64decode(key_b64, validate=True)
    except (ValueError, TypeError):
        raise ValidationFailed(details={"key": ["Not valid base64."]}) from None
    if not crypto.is_valid_public_key(raw):
        raise ValidationFailed(details={"key": [f"An ml-dsa-65 public key is {crypto.PUBLIC_KEY_BYTES} bytes."]})
    return SuppliedPublicKey(kid=kid or crypto.key_id(raw), algorithm=algorithm, key=raw)


@dataclass(frozen=True)
class KeyMaterial:
    """A new server-managed key as its row stores it: sealed here (`sealed` holds the blob) or made inside
    a signer backend (`reference` finds it there). Never the private key itself."""

    kid: str
    public_key: bytes
    sealed: bytes | None
    backend: str
    reference: str

    def as_result(self) -> dict:
        return {"kid": self.kid, "public_key": self.public_key, "sealed": self.sealed or b"",
                "backend": self.backend, "reference": self.reference}

    @classmethod
    def from_result(cls, result: dict) -> "KeyMaterial":
        try:
            public_key, kid = bytes(result["public_key"]), str(result["kid"])
            material = cls(kid=kid, public_key=public_key, sealed=bytes(result["sealed"]) or None,
                           backend=str(result["backend"]), reference=str(result["reference"]))
        except (KeyError, TypeError, ValueError):
            raise ServiceUnavailable("The signing service answered a key request without a key.") from None
        if not crypto.is_valid_public_key(public_key) or crypto.key_id(public_key) != kid:
            raise ServiceUnavailable("The signing service answered a key request with a key that does not check.")
        return material


def sealed_key_material(generator_id: uuid.UUID) -> KeyMaterial:
    """A fresh ML-DSA-65 key pair, its seed sealed under the newest KEY_ENCRYPTION_KEY id and bound to the
    generator and kid. Only where the keys are held: the signer service, or this process without one."""
    seed, raw_public = crypto.generate_keypair()
    kid = crypto.key_id(raw_public)
    return KeyMaterial(kid=kid, public_key=raw_public, sealed=_seal(seed, generator_id, kid), backend="sealed",
                       reference="")


def _add_key(generator: Generator, public_key: SuppliedPublicKey | None, *, backend: str = "") -> GeneratorKey:
    if public_key is not None:
        return GeneratorKey.objects.create(generator=generator, kid=public_key.kid, public_key=public_key.key)
    material = _new_key_material(generator, backend)
    return GeneratorKey.objects.create(generator=generator, kid=material.kid, public_key=material.public_key,
                                       encrypted_private_key=material.sealed, key_backend=material.backend,
                                       key_reference=material.reference)


def _new_key_material(generator: Generator, backend: str) -> KeyMaterial:
    # With a signer service the key is made there (this process cannot seal: it has no KEY_ENCRYPTION_KEY);
    # `backend` empty means the signer's default, else the backend the generator's keys already live in.
    if signer_configured():
        try:
            answer = signer_call("generate-key", org_id=str(generator.org_id), generator_id=str(generator.pk),
                                 args={"backend": backend})
        except SignerRefused as refused:
            raise ServiceUnavailable(f"The signing service could not make a key: {refused.detail}.",
                                     headers={"Retry-After": str(RETRY_AFTER_UNAVAILABLE)}) from None
        return KeyMaterial.from_result(answer)
    if backend not in ("", "sealed"):
        raise ServiceUnavailable(f"Keys in the {backend} backend are made by the signer service; none is configured.")
    return sealed_key_material(generator.pk)


def _seal(seed: bytes, generator_id: uuid.UUID, kid: str) -> bytes:
    ring = private_key_sealing_ring()
    return seal(seed, ring.newest_key, key_id=ring.newest_id, associated_data=_sealing_context(generator_id, kid))


def _sealing_context(generator_id: uuid.UUID, kid: str) -> bytes:
    # Binds a sealed seed to its row: a blob copied to another generator or kid will not decrypt.
    return f"generator-key:{generator_id}:{kid}".encode()


def _valid_formats(formats: list[str] | None) -> list[str]:
    if formats is None:
        return list(FAMILIES)
    unknown = sorted(set(formats) - set(FAMILIES))
    if unknown or not formats:
        raise ValidationFailed(details={"supported_formats": [f"Choose from {', '.join(FAMILIES)}."]})
    return [f for f in FAMILIES if f in formats]
