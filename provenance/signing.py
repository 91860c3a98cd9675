"""Server-managed signing (POST /v1/sign): watermark, token, hash, ML-DSA-65 signature, one record."""

import secrets
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from accounts.models import Organization
from billing.services import usage_precheck
from core.errors import FormatNotSupported, GeneratorClientManaged, PayloadTooLarge, ValidationFailed
from generators.selectors import generator_for_signing
from generators.services import generator_signing_seed
from media_codecs import Codec, CodecError, CorruptMedia, Media, MediaTooLarge, detect
from media_codecs.c2pa import UpstreamManifest, strip_manifest, validate_upstream
from provenance.models import Record
from provenance.selectors import record_token
from provenance.services import RecordDraft, record_create
from record_format import crypto
from record_format.hashing import content_hash_of_media
from record_format.payload import signed_payload_bytes

# The signed `watermark_id` of content whose format carries no watermark (video: a fingerprint only).
NO_WATERMARK = "none"


@dataclass(frozen=True)
class SignedContent:
    data: bytes
    record: Record
    token: str
    codec: Codec


def content_sign(*, org: Organization, generator_id: str, model: str, data: bytes,
                 declared_family: str | None) -> SignedContent:
    """Watermark `data`, embed its token, sign its hash and store the record (one transaction).

    Checks run cheapest first, before any decoding: generator (404/403), mode (400), format among the
    declared family's (400), structure and size limits (413), quota (402). The watermark is embedded
    where the format has one. Raises those ApiErrors, ValidationFailed for malformed media, and
    FormatNotSupported for content the codecs cannot handle.

    A C2PA manifest store in a JPEG or PNG is validated against the upload, removed from the signed file
    (the watermark changes the pixels its hard binding covers, so readers would show it as tampered) and
    kept with the record, to become the `parentOf` ingredient of the manifest the embed route adds.
    """
    key = generator_for_signing(org=org, generator_id=generator_id)
    if not key.generator.is_server_managed:
        raise GeneratorClientManaged()
    media = _media_for(data, declared_family, key.generator.supported_formats)
    codec = media.codec
    usage_precheck(org=org, count=1)
    media, upstream = _without_upstream_manifest(media)
    record_id = uuid.uuid4()
    token = record_token(record_id)
    watermark_id = NO_WATERMARK
    with codec_errors(codec):
        if codec.watermark_possible(media):
            mark_id = secrets.randbits(64)
            watermark_id = f"{mark_id:016x}"
            media = codec.open(codec.embed_watermark(media, mark_id))  # the input's pixels go here
        signed = codec.open(codec.embed_token(media, token))
        del media  # a marked copy of a 50 MB file is not kept beside the signed one and its stripped copy
        content_hash = content_hash_of_media(signed)
        fingerprints = codec.fingerprints(signed)
    message = signed_payload_bytes(content_hash=content_hash, generator_id=str(key.generator_id), model=model,
                                   watermark_id=watermark_id)
    signature = crypto.sign(generator_signing_seed(key), message)
    record = record_create(org=org, draft=RecordDraft(
        key=key, content_hash=content_hash, model=model, watermark_id=watermark_id, signature=signature,
        phash=fingerprints[0] if fingerprints else None,
        fingerprint_kind=codec.fingerprint_kind if fingerprints else None, format=codec.family,
        record_id=record_id, more_fingerprints=tuple(fingerprints[1:]), upstream=upstream))
    return SignedContent(data=signed.data, record=record, token=token, codec=codec)


@contextmanager
def codec_errors(codec: Codec) -> Iterator[None]:
    """Codec errors as API errors: over a limit 413, malformed 400 validation_error, else format_not_supported."""
    try:
        yield
    except MediaTooLarge as error:
        raise PayloadTooLarge(f"The content is over the signing limits: {error}") from None
    except CorruptMedia as error:
        raise ValidationFailed(details={"content": [f"The {codec.format} file is malformed: {error}"]}) from None
    except CodecError as error:
        raise FormatNotSupported(f"This {codec.format} file cannot be signed: {error}") from None


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
