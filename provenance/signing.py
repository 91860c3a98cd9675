"""Server-managed signing (POST /v1/sign): watermark, token, hash, ML-DSA-65 signature, one record."""

import secrets
import uuid
from dataclasses import dataclass

from accounts.models import Organization
from billing.services import usage_precheck
from config.errors import FormatNotSupported, GeneratorClientManaged, PayloadTooLarge, ValidationFailed
from generators.selectors import generator_for_signing
from generators.services import generator_signing_seed
from media_codecs import Codec, CodecError, MediaTooLarge, codec_for_data
from provenance import crypto
from provenance.hashing import content_hash_of
from provenance.models import Record
from provenance.payload import signed_payload_bytes
from provenance.selectors import record_token
from provenance.services import RecordDraft, record_create


@dataclass(frozen=True)
class SignedContent:
    data: bytes
    record: Record
    token: str
    codec: Codec


def content_sign(*, org: Organization, generator_id: str, model: str, data: bytes,
                 declared_family: str | None) -> SignedContent:
    """Watermark `data`, embed its token, sign its hash and store the record (one transaction).

    Checks run cheapest first, before any decoding: generator (404/403), mode (400), format (400),
    quota (402). Raises those ApiErrors, PayloadTooLarge for media over the pixel limits, and
    FormatNotSupported for content the codecs cannot handle.
    """
    key = generator_for_signing(org=org, generator_id=generator_id)
    if not key.generator.is_server_managed:
        raise GeneratorClientManaged()
    codec = _codec_for(data, declared_family, key.generator.supported_formats)
    usage_precheck(org=org, count=1)
    record_id, mark_id = uuid.uuid4(), secrets.randbits(64)
    token = record_token(record_id)
    try:
        signed = codec.embed_token(codec.embed_watermark(data, mark_id), token)
        content_hash = content_hash_of(codec.strip_token(signed))
        phash = codec.perceptual_hash(signed)
    except CodecError as error:
        raise FormatNotSupported(f"This {codec.format} file cannot be signed: {error}") from None
    watermark_id = f"{mark_id:016x}"
    message = signed_payload_bytes(content_hash=content_hash, generator_id=str(key.generator_id), model=model,
                                   watermark_id=watermark_id)
    signature = crypto.sign(generator_signing_seed(key), message)
    record = record_create(org=org, draft=RecordDraft(
        key=key, content_hash=content_hash, model=model, watermark_id=watermark_id, signature=signature,
        phash=phash, format=codec.family, record_id=record_id))
    return SignedContent(data=signed, record=record, token=token, codec=codec)


def _codec_for(data: bytes, declared_family: str | None, supported: list[str]) -> Codec:
    try:
        codec = codec_for_data(data)
    except MediaTooLarge as error:
        raise PayloadTooLarge(str(error)) from None
    except CodecError:
        raise FormatNotSupported("The content is not in a format the service can sign.") from None
    if declared_family and declared_family != codec.family:
        raise ValidationFailed(details={"format": [f"The content is {codec.family}, not {declared_family}."]})
    if codec.family not in supported:
        raise FormatNotSupported(f"This generator does not sign {codec.family} content.")
    return codec
