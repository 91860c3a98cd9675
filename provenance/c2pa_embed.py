"""POST /v1/records/:record_id/c2pa/embed: a C2PA manifest, signed with the generator's ML-DSA-65 key,
spliced into the record's signed JPEG or PNG (no pixel is decoded; docs/decisions.md, "C2PA embed")."""

import uuid
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings

from accounts.gates import require_feature
from accounts.models import Organization
from core.errors import Forbidden, FormatNotSupported, GeneratorClientManaged, NotFound, ValidationFailed
from generators.models import GeneratorKey
from generators.selectors import current_key
from generators.services import generator_signing_seed
from media_codecs import CodecError, Media, detect
from media_codecs.c2pa import ManifestFacts, UpstreamManifest, embed, self_signed_certificate, upstream_from_store
from provenance.models import Record
from provenance.selectors import record_for_embed, record_token
from provenance.signing import NO_WATERMARK, codec_errors
from record_format import crypto
from record_format.hashing import content_hash_of_media

CLAIM_GENERATOR = "Provenance Service"
CERTIFICATE_LIFETIME = timedelta(days=3650)  # the key's own life is bounded by rotation and revocation


@dataclass(frozen=True)
class EmbeddedAsset:
    data: bytes
    mime_type: str


def record_c2pa_embed(*, org: Organization, record_id: uuid.UUID, data: bytes) -> EmbeddedAsset:
    """`data` (the record's signed JPEG or PNG) with a signed manifest store for the record, replacing any.

    Checks, in order: plan (402) and owner email (403), the record (404) and its generator's organization
    (403), revoked (403), client-managed (400), format (400), the content hash against the record's (400).
    Consumes no signature of the quota. A manifest the image carried when it was signed (kept with the
    record) becomes the `parentOf` ingredient of ours.
    """
    require_feature(org, "c2pa_embed")
    record = record_for_embed(org=org, record_id=record_id)
    generator = record.generator
    if generator.is_revoked:
        raise Forbidden("This record's generator is revoked: its signatures are no longer valid.")
    if not generator.is_server_managed:
        raise GeneratorClientManaged("C2PA manifests are embedded for server-managed generators only: the "
                                     "service signs the manifest with the generator's key.")
    media = _signed_asset(data, record.content_hash)
    key = current_key(generator_id=generator.pk)
    if key is None:  # a live generator always has a current key; a race with revocation lands here
        raise NotFound("This record's generator has no signing key.")
    seed = generator_signing_seed(key)
    facts = ManifestFacts(
        record_id=str(record.pk), model=record.model, generator_id=str(generator.pk), kid=key.kid,
        token=record_token(record.pk), certificate_chain=(_certificate(seed, key, generator.name, org),),
        public_key_url=f"{settings.PUBLIC_BASE_URL}/v1/keys/{generator.pk}",
        watermark_id=None if record.watermark_id == NO_WATERMARK else int(record.watermark_id, 16),
        claim_generator=CLAIM_GENERATOR, created_at=record.signed_at.isoformat().replace("+00:00", "Z"))
    with codec_errors(media.codec):
        embedded = embed(media.data, facts, lambda message: crypto.sign(seed, message), parent=_parent(record))
    return EmbeddedAsset(embedded, media.codec.mime_type)


def _parent(record: Record) -> UpstreamManifest | None:
    """The manifest the upload carried when it was signed, to become our `parentOf` ingredient."""
    kept = getattr(record, "upstream_manifest", None)  # loaded with the record; absent for most
    if kept is None:
        return None
    return upstream_from_store(bytes(kept.store), format=kept.format, validation_results=kept.validation_results)


def _signed_asset(data: bytes, content_hash: str) -> Media:
    """The upload parsed, if it is a JPEG or PNG whose content hash is the record's. Raises ApiErrors."""
    try:
        codec = detect(data)
    except CodecError:
        codec = None
    if codec is None or codec.c2pa_carrier is None:
        raise FormatNotSupported("C2PA manifests are embedded in JPEG and PNG files only.")
    with codec_errors(codec):
        media = codec.open(data)
        uploaded_hash = content_hash_of_media(media)
    if uploaded_hash != content_hash:
        raise ValidationFailed(details={"content": [
            "This file is not the signed asset of this record: its content hash (without the token and any "
            "C2PA manifest) differs from the record's. Send the file POST /v1/sign returned, unmodified."]})
    return media


def _certificate(seed: bytes, key: GeneratorKey, generator_name: str, org: Organization) -> bytes:
    """A self-signed certificate for the generator key: C2PA readers parse no signature without an x5chain
    (they show its names as the signer). X.509 caps both names at 64 characters."""
    return self_signed_certificate(crypto.private_key_from_seed(seed),
                                   common_name=generator_name[:64] or f"generator {key.generator_id}",
                                   organization=org.name[:64] or "Provenance Service customer",
                                   not_before=key.created_at, not_after=key.created_at + CERTIFICATE_LIFETIME)
