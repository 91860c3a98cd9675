"""C2PA manifests for a record, signed with the generator's keys: POST /v1/records/:record_id/c2pa/embed
splices one into the record's signed file, and POST /v1/sign with `c2pa=true` returns the file already
carrying it (docs/decisions.md, "C2PA embed" and "Hybrid C2PA manifests").

A generator signs manifests as it chose at registration (`c2pa_signing`): with ML-DSA-65 alone, or hybrid
(ES256 under the deployment CA's chain, which validators trust, countersigned with ML-DSA-65). With a
time-stamp authority configured, every manifest signature carries its token (`sigTst2`), asked for in the
same round trip as the record signature's when both are new.
"""

import datetime
import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from django.conf import settings

from accounts.gates import require_feature
from accounts.models import Organization
from core import tsa
from core.errors import (
    Forbidden,
    FormatNotSupported,
    GeneratorClientManaged,
    NotFound,
    ServiceUnavailable,
    ValidationFailed,
)
from generators.certificates import C2paCredentials, generator_c2pa_credentials
from generators.models import GeneratorKey
from generators.selectors import current_key
from media_codecs import CodecError, Media, detect
from media_codecs.c2pa import ManifestFacts, UpstreamManifest, embed, upstream_from_store
from media_codecs.c2pa.manifest import COSE_ALG_ES256, COSE_ALG_ML_DSA_65, HYBRID, CoseKey, ManifestSigner
from media_codecs.disclosure import source_type_uri
from media_codecs.progress import Progress, finish, parts
from provenance.codec_errors import codec_errors
from provenance.models import NO_WATERMARK, Record
from provenance.selectors import record_for_embed, record_token
from record_format.hashing import content_hash_of_media
from signer.signing import signature_of

CLAIM_GENERATOR = "Provenance Service"


@dataclass(frozen=True)
class EmbeddedAsset:
    data: bytes
    mime_type: str


@dataclass(frozen=True)
class ManifestSubject:
    """What a record's manifest states: the record, before or after it is stored."""

    record_id: uuid.UUID
    model: str
    generator_id: uuid.UUID
    watermark_id: str
    signed_at: datetime.datetime


class RecordStamp:
    """Carries a record signature into the manifest's time-stamp round trip and its token back out."""

    def __init__(self, signature: bytes | None):
        self.signature = signature
        self.token: bytes | None = None


def record_c2pa_embed(*, org: Organization, record_id: uuid.UUID, data: bytes,
                      progress: Progress | None = None) -> EmbeddedAsset:
    """`data` (the record's signed file) with a signed manifest store for the record, replacing any.

    Checks, in order: plan (402) and owner email (403), the record (404) and its generator's organization
    (403), revoked (403), client-managed (400), format (400), the content hash against the record's (400).
    Consumes no signature of the quota. A manifest the upload carried when it was signed (kept with the
    record) becomes the `parentOf` ingredient of ours. `progress` (media_codecs/progress.py) hears how far
    the work on the file is (a job's); the route passes none.
    """
    record = record_c2pa_embed_admit(org=org, record_id=record_id)
    generator = record.generator
    checking, embedding = parts(progress, [1, 2])  # the hash check reads the file once, the embed twice
    media = _signed_asset(data, record.content_hash)
    finish(checking)
    key = current_key(generator_id=generator.pk)
    if key is None:  # a live generator always has a current key; a race with revocation lands here
        raise NotFound("This record's generator has no signing key.")
    subject = ManifestSubject(record.pk, record.model, generator.pk, record.watermark_id, record.signed_at)
    embedded = manifest_embed(media, subject=subject, key=key, parent=_parent(record), stamp=RecordStamp(None),
                              progress=embedding)
    return EmbeddedAsset(embedded, media.codec.mime_type)


def record_c2pa_embed_admit(*, org: Organization, record_id: uuid.UUID) -> Record:
    """The checks `record_c2pa_embed` makes before reading the file (a job makes them when it is accepted):
    plan (402) and owner email (403), the record (404) and its generator's organization (403), revoked
    (403), client-managed (400). Returns the record."""
    require_feature(org, "c2pa_embed")
    record = record_for_embed(org=org, record_id=record_id)
    generator = record.generator
    if generator.is_revoked:
        raise Forbidden("This record's generator is revoked: its signatures are no longer valid.")
    if not generator.is_server_managed:
        raise GeneratorClientManaged("C2PA manifests are embedded for server-managed generators only: the "
                                     "service signs the manifest with the generator's key.")
    return record


def manifest_embed(media: Media, *, subject: ManifestSubject, key: GeneratorKey, parent: UpstreamManifest | None,
                   stamp: RecordStamp, progress: Progress | None = None) -> bytes:
    """The file with a manifest for `subject` signed by `key`'s generator; `stamp.token` gets the record
    signature's token when `stamp.signature` is set and an authority is configured.

    Raises ServiceUnavailable when the time-stamp authority fails, the codec's API errors for a bad file.
    """
    credentials = generator_c2pa_credentials(key, private_key=False)  # the signer signs (signer.signing)
    facts = ManifestFacts(
        record_id=str(subject.record_id), model=subject.model, generator_id=str(subject.generator_id), kid=key.kid,
        token=record_token(subject.record_id), certificate_chain=credentials.ml_dsa_chain,
        public_key_url=f"{settings.PUBLIC_BASE_URL}/v1/keys/{subject.generator_id}",
        watermark_id=None if subject.watermark_id == NO_WATERMARK else int(subject.watermark_id, 16),
        claim_generator=CLAIM_GENERATOR, created_at=_iso_z(subject.signed_at),
        digital_source_type=source_type_uri(key.generator.digital_source_type))
    signer = manifest_signer(key, credentials, stamp)
    try:
        with codec_errors(media.codec):
            return embed(media.data, facts, signer, parent=parent, progress=progress)
    except tsa.TimestampUnavailable as error:
        raise ServiceUnavailable(f"The time-stamp authority did not answer ({error}); nothing was signed. Try "
                                 "again shortly.") from None


def manifest_signer(key: GeneratorKey, credentials: C2paCredentials, stamp: RecordStamp) -> ManifestSigner:
    hybrid = credentials.signing == HYBRID
    ml_dsa = CoseKey(COSE_ALG_ML_DSA_65, credentials.ml_dsa_chain,
                     _signer(key, "c2pa-countersignature" if hybrid else "c2pa-claim", "ml-dsa-65"),
                     kid=key.kid, public_key_url=f"{settings.PUBLIC_BASE_URL}/v1/keys/{key.generator_id}")
    time_stamp = _stamper(stamp) if settings.TSA_URL else None
    if not hybrid:
        return ManifestSigner(ml_dsa, time_stamp=time_stamp)
    es256 = CoseKey(COSE_ALG_ES256, credentials.es256_chain, _signer(key, "c2pa-claim", "es256"))
    return ManifestSigner(es256, ml_dsa, time_stamp=time_stamp)


def _signer(key: GeneratorKey, purpose: str, algorithm: str):
    def sign(message: bytes) -> bytes:
        return signature_of(key=key, org_id=str(key.generator.org_id), purpose=purpose, algorithm=algorithm,
                            message=message)
    return sign


def _stamper(stamp: RecordStamp):
    def time_stamp(messages: Sequence[bytes]) -> list[bytes | None]:
        extra = [stamp.signature] if stamp.signature is not None else []
        tokens = tsa.stamp_many([*extra, *messages])
        if extra:
            stamp.token = tokens[0]
        return tokens[len(extra):]
    return time_stamp


def _iso_z(moment: datetime.datetime) -> str:
    return moment.astimezone(datetime.UTC).isoformat().replace("+00:00", "Z")


def _parent(record: Record) -> UpstreamManifest | None:
    """The manifest the upload carried when it was signed, to become our `parentOf` ingredient."""
    kept = getattr(record, "upstream_manifest", None)  # loaded with the record; absent for most
    if kept is None:
        return None
    return upstream_from_store(bytes(kept.store), format=kept.format, validation_results=kept.validation_results)


def _signed_asset(data: bytes, content_hash: str) -> Media:
    """The upload parsed, if its format carries a manifest and its content hash is the record's."""
    try:
        codec = detect(data)
    except CodecError:
        codec = None
    if codec is None or codec.c2pa_carrier is None:
        raise FormatNotSupported("C2PA manifests are embedded in JPEG, PNG, WebP, WAV, MP3, FLAC, MP4, MOV and PDF "
                                 "files; this file's format carries its token only.")
    with codec_errors(codec):
        media = codec.open(data)
        uploaded_hash = content_hash_of_media(media)
    if uploaded_hash != content_hash:
        raise ValidationFailed(details={"content": [
            "This file is not the signed asset of this record: its content hash (without the token and any "
            "C2PA manifest) differs from the record's. Send the file POST /v1/sign returned, unmodified."]})
    return media
