"""Server-managed signing (POST /v1/sign): watermark, token, hash, ML-DSA-65 signature, one record."""

import secrets
import uuid
from dataclasses import dataclass

from django.utils import timezone

from accounts.gates import require_feature
from accounts.models import Organization
from billing.services import usage_precheck
from core.errors import FormatNotSupported, GeneratorClientManaged, PayloadTooLarge, ValidationFailed
from generators.models import GeneratorKey
from generators.selectors import generator_for_signing
from media_codecs import Codec, CodecError, Media, MediaTooLarge, detect
from media_codecs.c2pa import UpstreamManifest, strip_manifest, validate_upstream
from media_codecs.progress import Progress, finish, parts
from provenance.c2pa_embed import ManifestSubject, RecordStamp, manifest_embed
from provenance.codec_errors import codec_errors
from provenance.disclosures import CarriedDisclosure
from provenance.models import NO_WATERMARK, Record
from provenance.selectors import record_token
from provenance.services import RecordDraft, record_create
from record_format import crypto
from record_format.hashing import content_hash_of_media
from record_format.payload import signed_payload_bytes
from record_format.times import iso_timestamp
from signer.signing import signature_of


@dataclass(frozen=True)
class SignedContent:
    data: bytes
    record: Record
    token: str
    codec: Codec
    manifest: bool = False  # whether `data` carries a C2PA manifest for the record


@dataclass(frozen=True)
class PreparedSigning:
    """Signed content whose record is not stored yet: `record_create(draft=...)` stores it."""

    data: bytes
    draft: RecordDraft
    token: str
    codec: Codec
    manifest: bool = False


def content_sign(*, org: Organization, generator_id: str, model: str, data: bytes,
                 declared_family: str | None, c2pa: bool = False, watermark: bool = True,
                 visible: bool = False) -> SignedContent:
    """Watermark `data`, embed its token, sign its hash and store the record (one transaction).

    Checks run cheapest first, before any decoding: generator (404/403), mode (400), format among the
    declared family's (400), structure and size limits (413), quota (402). The watermark is embedded
    where the format has one. Raises those ApiErrors, ValidationFailed for malformed media, and
    FormatNotSupported for content the codecs cannot handle.

    A C2PA manifest store in a JPEG or PNG is validated against the upload, removed from the signed file
    (the watermark changes the pixels its hard binding covers, so readers would show it as tampered) and
    kept with the record, to become the `parentOf` ingredient of the manifest the embed route adds.

    With `c2pa`, a format that carries a C2PA manifest comes back with one for the record (the upstream
    manifest as its parent), still one signature of the quota; other formats carry their token only.
    With `watermark` false the mark is skipped. With `visible`, the generator's visible label is shown on
    the content (media_codecs/label.py) before the mark; a format that cannot show one is 400
    `validation_error`. This is the synchronous route: content whose mark costs more
    than a request may (`Codec.watermark_fits_request`: a long video) is signed without it, and the same
    content sent as a job is marked (docs/decisions.md).
    """
    prepared = content_sign_prepare(org=org, generator_id=generator_id, model=model, data=data,
                                    declared_family=declared_family, c2pa=c2pa, watermark=watermark,
                                    visible=visible, synchronous=True)
    record = record_create(org=org, draft=prepared.draft)
    return SignedContent(data=prepared.data, record=record, token=prepared.token, codec=prepared.codec,
                         manifest=prepared.manifest)


def signing_admit(*, org: Organization, generator_id: str, count: int, c2pa: bool = False) -> None:
    """The checks `content_sign` makes before reading any content, for `count` files signed later (a job):
    plan gate (402), generator (404/403), mode (400), quota for all of them (402)."""
    _signing_key(org, generator_id, c2pa)
    usage_precheck(org=org, count=count)


def _signing_key(org: Organization, generator_id: str, c2pa: bool) -> GeneratorKey:
    if c2pa:
        require_feature(org, "c2pa_embed")
    key = generator_for_signing(org=org, generator_id=generator_id)
    if not key.generator.is_server_managed:
        raise GeneratorClientManaged()
    return key


def content_sign_prepare(*, org: Organization, generator_id: str, model: str, data: bytes,
                         declared_family: str | None, c2pa: bool = False, watermark: bool = True,
                         visible: bool = False, synchronous: bool = False,
                         progress: Progress | None = None) -> PreparedSigning:
    """Everything `content_sign` does but storing the record: the caller stores `draft` (a job stores it
    in the transaction that marks its item done). `progress` (media_codecs/progress.py) hears how far the
    work on the content is; the synchronous route passes none. `synchronous` leaves out a mark that does
    not fit a request (`content_sign`). Raises as `content_sign` does."""
    key = _signing_key(org, generator_id, c2pa)
    media = _media_for(data, declared_family, key.generator.supported_formats)
    codec = media.codec
    if visible and not codec.can_label:
        raise ValidationFailed(details={"disclosure": [
            "A visible label is shown on images (JPEG, PNG, WebP), plain text and HTML; not on "
            f"{codec.format.upper()}."]})
    usage_precheck(org=org, count=1)
    media, upstream = _without_upstream_manifest(media)
    record_id = uuid.uuid4()
    token = record_token(record_id)
    watermark_id = NO_WATERMARK
    with codec_errors(codec):
        watermarking = watermark and codec.watermark_possible(media) and (
            not synchronous or codec.watermark_fits_request(media))
        marking, hashing, fingerprinting, embedding = _signing_parts(progress, watermarking, c2pa and
                                                                     codec.c2pa_carrier is not None)
        label = key.generator.label if visible else None
        if watermarking:
            mark_id = secrets.randbits(64)
            watermark_id = f"{mark_id:016x}"
            media = codec.open(codec.embed_watermark(media, mark_id, marking, label))  # the input's pixels go here
        elif label is not None:
            media = codec.open(codec.embed_label(media, label))
        signed_at = timezone.now()  # the record's, and the time of creation the file discloses
        disclosure = key.generator.disclosure(identifier=str(record_id), created=iso_timestamp(signed_at))
        signed = codec.open(codec.embed_token(media, token, disclosure))
        del media  # a marked copy of a 50 MB file is not kept beside the signed one and its stripped copy
        content_hash = content_hash_of_media(signed)
        finish(hashing)
        fingerprints = codec.fingerprints(signed, fingerprinting)
        finish(fingerprinting)
    message = signed_payload_bytes(content_hash=content_hash, generator_id=str(key.generator_id), model=model,
                                   watermark_id=watermark_id)
    signature = signature_of(key=key, org_id=str(org.pk), purpose="record", algorithm=crypto.ALGORITHM,
                             message=message)
    output, stamp = signed.data, RecordStamp(signature)
    if c2pa and codec.c2pa_carrier is not None:
        subject = ManifestSubject(record_id, model, key.generator_id, watermark_id, signed_at)
        output = manifest_embed(signed, subject=subject, key=key, parent=upstream, stamp=stamp, progress=embedding)
        finish(embedding)
    manifest = output is not signed.data
    draft = RecordDraft(
        key=key, content_hash=content_hash, model=model, watermark_id=watermark_id, signature=signature,
        phash=fingerprints[0] if fingerprints else None,
        fingerprint_kind=codec.fingerprint_kind if fingerprints else None, format=codec.family,
        record_id=record_id, more_fingerprints=tuple(fingerprints[1:]), upstream=upstream,
        signature_timestamp=stamp.token, signed_at=signed_at,
        disclosures=file_disclosures(codec, watermark_id=watermark_id, manifest=manifest, visible=visible))
    return PreparedSigning(data=output, draft=draft, token=token, codec=codec, manifest=manifest)


def file_disclosures(codec: Codec, *, watermark_id: str, manifest: bool, visible: bool = False) -> int:
    """The CarriedDisclosure flags of a file server-managed signing wrote: its token and metadata where the
    format carries a token (plain text carries none), a mark when one was embedded, a C2PA manifest when one
    was, the visible label when one was shown."""
    flags = CarriedDisclosure.METADATA if codec.carries_token else CarriedDisclosure(0)
    if watermark_id != NO_WATERMARK:
        flags |= CarriedDisclosure.MARK
    if manifest:
        flags |= CarriedDisclosure.C2PA
    if visible:
        flags |= CarriedDisclosure.VISIBLE
    return int(flags)


# The parts of a signing's progress, by their rough share of its work: a watermark re-encodes the content,
# the fingerprints decode some of it (a video's first seconds), a manifest hashes it again; the token and
# the content hash cost the least.
SIGNING_WEIGHTS = {"watermark": 6, "token and hash": 1, "fingerprints": 3, "manifest": 2}


def _signing_parts(progress: Progress | None, watermarking: bool, manifest: bool) -> list[Progress | None]:
    """One callback per part (watermark, token and hash, fingerprints, manifest); a part not done weighs 0."""
    done = {"watermark": watermarking, "manifest": manifest}
    return parts(progress, [weight if done.get(name, True) else 0 for name, weight in SIGNING_WEIGHTS.items()])


def _without_upstream_manifest(media: Media) -> tuple[Media, UpstreamManifest | None]:
    """The upload without its C2PA store, and that store validated; the upload as is when it has none."""
    if media.codec.c2pa_carrier is None:
        return media, None
    try:
        upstream = validate_upstream(media.data)
    except MediaTooLarge as error:
        raise PayloadTooLarge(f"The content's C2PA manifest is over the limits: {error}") from None
    except CodecError as error:
        raise ValidationFailed(details={"content": [
            f"The C2PA manifest in this file is malformed ({error}); remove it or send the file as its "
            "producer wrote it."]}) from None
    if upstream is None:
        return media, None
    with codec_errors(media.codec):
        return media.codec.open(strip_manifest(media.data)), upstream


def _media_for(data: bytes, declared_family: str | None, supported: list[str]) -> Media:
    """Detect the content among the declared family's formats (or all) and parse it once."""
    try:
        codec = detect(data, declared_family)
    except CodecError:
        family = f"{declared_family} " if declared_family else ""
        raise FormatNotSupported(f"The content is not in a {family}format the service can sign.") from None
    if codec.family not in supported:
        raise FormatNotSupported(f"This generator does not sign {codec.family} content.")
    with codec_errors(codec):
        return codec.open(data)
