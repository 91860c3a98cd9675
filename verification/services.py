"""Verifying content against the stored records (spec: Verification; addendum section 5).

Resolution order: an explicit token, the token in the content's metadata, the watermark, then the
perceptual-hash lookup. Problems are reported in the result (`reason`), never as errors.
"""

from dataclasses import dataclass, field

from django.db import transaction

from audit.services import audit_write
from media_codecs import Codec, CodecError, codec_for_data
from provenance import crypto
from provenance.hashing import content_hash_of
from provenance.models import Record
from provenance.payload import signed_payload_bytes
from provenance.selectors import record_id_from_token
from provenance.tokens import InvalidToken
from verification import selectors
from webhooks.events import event_emit


@dataclass
class Verification:
    authentic: bool = False
    tampered: bool = False
    confidence: str = "none"
    token_source: str = "none"
    watermark_found: bool = False
    signature_valid: bool = False
    record: Record | None = None
    reason: str | None = None
    problems: list[str] = field(default_factory=list)

    @property
    def record_found(self) -> bool:
        return self.record is not None


def content_verify(*, data: bytes, token: str | None = None) -> Verification:
    """Verify one piece of content (any format /v1/sign produces). Never raises for bad content."""
    result = Verification()
    codec = _codec_or_none(data)
    mark_id = _watermark(codec, data)
    result.watermark_found = mark_id is not None
    token, result.token_source = _token(codec, data, token)
    if token is not None:
        result.record = _record_for_token(token, result)
    elif mark_id is not None:
        result.token_source = "watermark"
        result.record = selectors.record_for_watermark(mark_id)
        if result.record is None:
            result.problems.append("record_not_found")
    else:
        result.record = _record_for_phash(codec, data, result)
    if result.record is not None:
        _check_record(result, codec, data)
    _conclude(result)
    if result.record is not None:
        _announce(result)
    return result


def _codec_or_none(data: bytes) -> Codec | None:
    try:
        return codec_for_data(data)
    except CodecError:
        return None


def _watermark(codec: Codec | None, data: bytes) -> int | None:
    if codec is None:
        return None
    try:
        return codec.extract_watermark(data)
    except CodecError:
        return None


def _token(codec: Codec | None, data: bytes, provided: str | None) -> tuple[str | None, str]:
    if provided:
        return provided, "provided"
    if codec is None:
        return None, "none"
    try:
        embedded = codec.extract_token(data)
    except CodecError:
        embedded = None
    return (embedded, codec.token_source) if embedded else (None, "none")


def _record_for_token(token: str, result: Verification) -> Record | None:
    try:
        record_id = record_id_from_token(token)
    except InvalidToken:
        result.problems.append("invalid_token")
        return None
    record = selectors.record_for_id(record_id)
    if record is None:
        result.problems.append("record_not_found")
    return record


def _record_for_phash(codec: Codec | None, data: bytes, result: Verification) -> Record | None:
    try:
        phash = codec.perceptual_hash(data) if codec else None
    except CodecError:
        phash = None
    record = selectors.record_for_phash(phash) if phash else None
    if record is not None:
        result.token_source = "phash"
    return record


def _check_record(result: Verification, codec: Codec | None, data: bytes) -> None:
    record = result.record
    message = signed_payload_bytes(**record.signed_payload)
    # A revoked generator's signatures are all invalid (spec: States, Generator).
    result.signature_valid = not record.generator.is_revoked and crypto.verify(
        bytes(record.key.public_key), message, bytes(record.signature))
    if not result.signature_valid:
        result.problems.append("signature_invalid")
    result.tampered = _content_hash(codec, data) != record.content_hash
    if result.tampered:
        result.problems.append("content_tampered")


def _content_hash(codec: Codec | None, data: bytes) -> str:
    try:
        return content_hash_of(codec.strip_token(data) if codec else data)
    except CodecError:
        return content_hash_of(data)


def _conclude(result: Verification) -> None:
    result.authentic = result.record_found and result.signature_valid and not result.tampered
    if result.authentic:
        result.confidence = "high" if result.watermark_found else "medium"
    elif result.record_found or result.watermark_found or result.token_source != "none":
        result.confidence = "low"  # partial, inconsistent signals
    if not result.authentic:
        result.reason = result.problems[0] if result.problems else "no_provenance_found"


def _announce(result: Verification) -> None:
    """Audit `verify` for the organization that owns the record; fire verify webhooks."""
    record = result.record
    metadata = {"record_id": str(record.pk), "authentic": result.authentic, "tampered": result.tampered,
                "confidence": result.confidence, "token_source": result.token_source}
    with transaction.atomic():
        audit_write(org=record.org, type="verify", metadata=metadata)
        event_emit(org=record.org, kind="verify.attempted", data=metadata)
        if result.tampered:
            event_emit(org=record.org, kind="verify.tamper_detected", data=metadata)
