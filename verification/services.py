"""Verifying content against the stored records (spec: Verification; addendum section 5).

Resolution order: an explicit token, the token in our C2PA manifest (every format with a carrier), the token in the
content's metadata, the watermark, the file's exact content hash, then the perceptual-hash lookup. An
embedded token or a watermark whose record is missing, or whose record's hash differs from the file's,
gives way to the earliest record of the file's exact hash when there is one; an explicit token is always
answered about that token (docs/decisions.md, "Verification"). Problems are reported in the
result (`reason`), never as errors; only content over the limits (pixels, container structure, the
request's cost budget, REQUEST_UNITS) is refused, before anything is decoded. Each file is parsed once
(`open_media`) and decoded at most once; every step shares that parse.
"""

import contextlib
import datetime
from collections.abc import Callable
from dataclasses import dataclass, field

from cryptography import x509
from django.db import transaction

from audit.services import audit_write_many
from core import tsa
from core.errors import PayloadTooLarge
from generators.certificates import signing_trust_anchors
from generators.selectors import key_by_kid
from media_codecs import CodecError, Media, MediaTooLarge, open_media
from media_codecs.base import BYTES_PER_UNIT, file_units
from media_codecs.c2pa import ReadManifest, read_manifest
from provenance.models import Record
from provenance.selectors import record_id_from_token
from provenance.services import record_keep_mark_in_file
from provenance.tokens import InvalidToken
from record_format import crypto, manifest_checks, timestamp
from record_format.hashing import content_hash_of_opened
from record_format.manifest_checks import ManifestReport
from record_format.payload import signed_payload_bytes
from transparency.selectors import record_logs
from verification import selectors
from webhooks.events import events_emit

# One cost budget for every verification request (single, batch, byContent), in verification units
# (media_codecs.base.Work: about 100 ms of a worker's CPU each), read from the parsed headers before
# anything is decoded: what reading the mark and the fingerprint would decode (pixels, audio samples, a
# video frame, characters, PDF objects) plus each file's hashing. 20 units keep the worst admitted
# request within 2 s of CPU (bench/verify_budget.py): one 30-second read of a long audio file, one image
# at the pixel limit, or a batch of files that add up to as much.
REQUEST_UNITS = 20.0
BATCH_MAX_BYTES = 25 * 1024 * 1024

# What a request is charged against the per-IP limit before its work: each file as many verifications
# as its units, rounded, and at least one (a 1 MP image is one, a 12-second clip three).
Charge = Callable[[int], None]


def file_cost(units: float) -> int:
    """A file's charge against the per-IP limit: its units rounded, at least 1."""
    return max(1, int(units + 0.5))


@dataclass(frozen=True)
class PassedOver:
    """What an embedded token or a watermark pointed to when the exact hash's record answered instead."""

    source: str  # the token_source it came from: c2pa, xmp, metadata or watermark
    record: Record | None  # None: the token was invalid or its record does not exist
    problem: str  # why it did not answer: invalid_token, record_not_found or content_tampered


@dataclass(frozen=True)
class TimeStampCheck:
    """The record signature's time stamp checked against the authority roots this deployment trusts."""

    status: str  # "valid", "invalid", or "unchecked" (no authority root is configured here)
    time: datetime.datetime | None  # the stamped time, once the token is shown to stamp the signature
    authority: str
    problem: str | None = None


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
    log: dict | None = None  # the record's transparency-log object, when a record was found
    content_hash: str | None = None  # the file's, hashed as signing hashes it
    passed_over: PassedOver | None = None
    time_stamp: TimeStampCheck | None = None  # the record signature's RFC 3161 stamp, when it has one
    c2pa: ManifestReport | None = None  # the checks of the file's C2PA manifest, when it carries one

    @property
    def record_found(self) -> bool:
        return self.record is not None


def content_open(data: bytes) -> Media | None:
    """Parse content for verification once; None when no codec reads it (reported as no provenance).

    Raises PayloadTooLarge when the content passes a limit (pixels, segments, chunks, scans).
    """
    try:
        return open_media(data)
    except MediaTooLarge as error:
        raise PayloadTooLarge(f"The content is over the verification limits: {error}") from None
    except CodecError:
        return None


def content_units(data: bytes, media: Media | None) -> float:
    """What verifying the content costs, in units, from its parsed headers: content no codec reads (or
    whose header disagrees with its payload) is hashed and looked up, never decoded. A format that carries
    a C2PA manifest is charged one more pass over its bytes: a manifest's hard binding hashes the file."""
    if media is None:
        return file_units(data)
    binding = len(data) / BYTES_PER_UNIT if media.codec.c2pa_carrier is not None else 0.0
    return media.codec.decode_work(media).units + binding


def contents_admit(contents: list[bytes], charge: Charge | None = None) -> list[Media | None]:
    """Parse every file and hold the request to the budget before anything is decoded: raise
    PayloadTooLarge past REQUEST_UNITS (or BATCH_MAX_BYTES), then `charge` the request's cost (the sum of
    `file_cost`) to the caller's limit, which may raise Throttled."""
    total_bytes = sum(len(data) for data in contents)
    if len(contents) > 1 and total_bytes > BATCH_MAX_BYTES:
        raise PayloadTooLarge(f"A verification batch is limited to {BATCH_MAX_BYTES // (1024 * 1024)} MB in all; "
                              "send large files one by one.")
    opened = [content_open(data) for data in contents]
    units = [content_units(data, media) for data, media in zip(contents, opened, strict=True)]
    if sum(units) > REQUEST_UNITS:
        what = "these files" if len(contents) > 1 else "this file"
        raise PayloadTooLarge(f"Verifying {what} would cost {sum(units):.1f} units, over the {REQUEST_UNITS:.0f} "
                              "one request may use (docs/api.md, verification cost); send fewer or smaller files.",
                              details={"units": round(sum(units), 1), "max_units": REQUEST_UNITS})
    if charge is not None:
        charge(sum(file_cost(value) for value in units))
    return opened


def content_verify(*, data: bytes, token: str | None = None, charge: Charge | None = None) -> Verification:
    """Verify one piece of content (any format /v1/sign produces), within the request budget.
    Raises PayloadTooLarge, or what `charge` raises."""
    [media] = contents_admit([data], charge)
    result = _verify(data, media, token)
    _attach_logs([result])
    _announce([result])
    return result


def contents_verify(*, items: list[tuple[bytes, str | None]], charge: Charge | None = None) -> list[Verification]:
    """Verify a batch of (content, token) pairs in order, within one budget for the whole request.

    Every item is parsed and the budget checked before any is decoded (`contents_admit`). Raises
    PayloadTooLarge, or what `charge` raises.
    """
    opened = contents_admit([data for data, _ in items], charge)
    results = []
    for index, (data, token) in enumerate(items):
        media, opened[index] = opened[index], None  # the decoded pixels go with the item
        results.append(_verify(data, media, token))
    _attach_logs(results)
    _announce(results)
    return results


def _attach_logs(results: list[Verification]) -> None:
    """Each found record's transparency-log object, for the whole request in one query at most."""
    records = [result.record for result in results if result.record is not None]
    logs = record_logs(records) if records else {}
    for result in results:
        result.log = logs.get(result.record.pk) if result.record is not None else None


def _verify(data: bytes, media: Media | None, token: str | None) -> Verification:
    result = Verification(content_hash=content_hash_of_opened(data, media))
    provided = bool(token)
    found = _manifest(media)
    manifest = None if token or found is None or found.token is None else found
    if manifest is not None:
        token, result.token_source = manifest.token, "c2pa"
    else:
        token, result.token_source = _token(media, token)
    mark_id = None
    if token is not None:
        result.record = _record_for_token(token, result)
    else:
        mark_id = _watermark(media)
        if mark_id is not None:
            result.token_source = "watermark"
            result.record = selectors.record_for_watermark(mark_id)
            if result.record is None:
                result.problems.append("record_not_found")
    if result.record is not None:
        _check_record(result)
    if found is not None:
        result.c2pa = _manifest_report(data, found, result.record)
        if manifest is not None and result.record is not None:
            _check_manifest(result, manifest, result.c2pa)
    if not provided and (result.record is None or result.tampered):
        exact = selectors.record_for_content_hash(result.content_hash)
        if exact is not None and exact.pk != getattr(result.record, "pk", None):
            result = _answered_by_exact_hash(result, exact)
        elif result.token_source == "none":
            result.record = _record_for_phash(media, result)
            if result.record is not None:
                _check_record(result)
    # The mark is a signal beside the record: it counts when it is the answering record's own mark (any
    # mark, when no record answers). Without a token the file was read already.
    if token is not None:
        result.watermark_found = _mark_found(result, media)
    elif mark_id is not None:
        result.watermark_found = result.record is None or _is_own_mark(result.record, mark_id)
    _conclude(result)
    return result


def _answered_by_exact_hash(pointed: Verification, exact: Record) -> Verification:
    """The result of the exact hash's record, noting what the token or watermark pointed to instead."""
    result = Verification(token_source="content_hash", record=exact, content_hash=pointed.content_hash)
    if pointed.token_source != "none":
        result.passed_over = PassedOver(source=pointed.token_source, record=pointed.record,
                                        problem=pointed.problems[0])
    _check_record(result)
    return result


def _is_own_mark(record: Record, mark_id: int | None) -> bool:
    """Whether `mark_id` is the mark the service made for `record` (server-managed records only: a
    client-managed record's watermark_id is its caller's claim, never a mark the service made)."""
    return mark_id is not None and record.generator.is_server_managed and f"{mark_id:016x}" == record.watermark_id


def _mark_found(result: Verification, media: Media | None) -> bool:
    """Whether the content carries the record's own mark (any mark when no record was found). A record's own
    file, unchanged (its content hash matches), is read once and the answer kept with the record: the hash
    covers every byte the reader decodes, so a read of that file finds the same each time. Any other file
    is read."""
    record = result.record
    if record is None:
        return _watermark(media) is not None
    own_file = not result.tampered and media is not None and media.codec.hash_covers_mark
    if own_file and record.mark_in_file is not None:
        return record.mark_in_file
    found = _is_own_mark(record, _watermark(media))
    if own_file:
        record_keep_mark_in_file(record=record, found=found)
    return found


def _watermark(media: Media | None) -> int | None:
    if media is None or not media.codec.can_watermark:
        return None
    try:
        return media.codec.extract_watermark(media)
    except CodecError:
        return None


def _token(media: Media | None, provided: str | None) -> tuple[str | None, str]:
    if provided:
        return provided, "provided"
    if media is None:
        return None, "none"
    try:
        embedded = media.codec.extract_token(media)
    except CodecError:
        embedded = None
    return (embedded, media.codec.token_source) if embedded else (None, "none")


def _manifest(media: Media | None) -> ReadManifest | None:
    """The C2PA manifest the file carries (ours or anyone's), None when it has none or an unreadable one."""
    if media is None or media.codec.c2pa_carrier is None:
        return None
    try:
        return read_manifest(media.data)
    except CodecError:
        return None


def _manifest_report(data: bytes, manifest: ReadManifest, record: Record | None) -> ManifestReport:
    """Every check of the manifest; the post-quantum key is the record's generator's key of the signature's kid."""

    def pq_verify(kid: str | None, message: bytes, signature: bytes) -> bool | None:
        if record is None or manifest.token is None:
            return None
        key = record.key if kid == record.key.kid else key_by_kid(generator_id=record.generator_id, kid=kid or "")
        return key is not None and crypto.verify(bytes(key.public_key), message, signature)

    return manifest_checks.check_manifest(data, manifest, anchors=signing_trust_anchors(),
                                          tsa_roots=tsa.tsa_roots(), pq_verify=pq_verify)


def _check_manifest(result: Verification, manifest: ReadManifest, report: ManifestReport) -> None:
    """Our manifest must be signed by the record's generator (both signatures of a hybrid one), name that
    record, and still hash to the file: a bad signature or assertion is `signature_invalid`, a file that no
    longer matches its binding is tampering."""
    names_record = manifest.provenance.get("record_id") == str(result.record.pk)
    if not (report.signatures_valid and report.status("assertions") == "valid" and names_record):
        result.signature_valid = False
        _note(result, "signature_invalid")
    if report.status("hard_binding") != "valid":
        result.tampered = True
        _note(result, "content_tampered")


def _note(result: Verification, problem: str) -> None:
    if problem not in result.problems:
        result.problems.append(problem)


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


def _record_for_phash(media: Media | None, result: Verification) -> Record | None:
    try:
        values = media.codec.query_fingerprints(media) if media and media.codec.fingerprint_kind else []
    except CodecError:
        values = []
    record = selectors.record_for_fingerprints(kind=media.codec.fingerprint_kind, values=values) if values else None
    if record is not None:
        result.token_source = "phash"
    return record


def _check_record(result: Verification) -> None:
    record = result.record
    message = signed_payload_bytes(**record.signed_payload)
    # A revoked generator's signatures are all invalid (spec: States, Generator).
    result.signature_valid = not record.generator.is_revoked and crypto.verify(
        bytes(record.key.public_key), message, bytes(record.signature))
    if not result.signature_valid:
        result.problems.append("signature_invalid")
    result.tampered = result.content_hash != record.content_hash
    if result.tampered:
        result.problems.append("content_tampered")
    result.time_stamp = record_time_stamp_check(record)


def record_time_stamp_check(record: Record) -> TimeStampCheck | None:
    """Whether the record's stamp is a trusted authority's stamp of its signature, and the time it proves."""
    if record.signature_timestamp is None:
        return None
    token = bytes(record.signature_timestamp)
    try:
        authority = timestamp.token_facts(token).authority
    except timestamp.TimestampError as error:
        return TimeStampCheck("invalid", None, "", str(error))
    roots = [x509.load_der_x509_certificate(root) for root in tsa.tsa_roots()]
    if not roots:
        return TimeStampCheck("unchecked", None, authority, "no time-stamp authority is trusted here")
    try:
        return TimeStampCheck("valid", timestamp.time_of(token, bytes(record.signature), roots), authority)
    except timestamp.TimestampError as error:
        return TimeStampCheck("invalid", None, authority, str(error))


def _conclude(result: Verification) -> None:
    result.authentic = result.record_found and result.signature_valid and not result.tampered
    if result.authentic:
        result.confidence = "high" if result.watermark_found else "medium"
    elif result.record_found or result.watermark_found or result.token_source != "none":
        result.confidence = "low"  # partial, inconsistent signals
    if not result.authentic:
        result.reason = result.problems[0] if result.problems else "no_provenance_found"


def _announce(results: list[Verification]) -> None:
    """Audit `verify` for each organization that owns a verified record and fire its verify webhooks:
    one transaction, and one delivery round per organization, for the whole request.

    One organization's events are a single INSERT, atomic on its own, and their deliveries wait for
    nothing else, so no transaction is opened for them (BEGIN and COMMIT were half of a single
    verification's statements); deliveries still start once the INSERT is committed."""
    by_org: dict = {}
    for result in results:
        if result.record is not None:
            by_org.setdefault(result.record.org_id, []).append(result)
    if not by_org:
        return
    with transaction.atomic() if len(by_org) > 1 else contextlib.nullcontext():
        for org_results in by_org.values():
            org = org_results[0].record.org
            metadatas = [_verify_metadata(result) for result in org_results]
            audit_write_many(org=org, type="verify", metadatas=metadatas)
            events_emit(org=org, events=[
                (kind, metadata) for result, metadata in zip(org_results, metadatas, strict=True)
                for kind in (("verify.attempted", "verify.tamper_detected") if result.tampered
                             else ("verify.attempted",))])


def _verify_metadata(result: Verification) -> dict:
    return {"record_id": str(result.record.pk), "authentic": result.authentic, "tampered": result.tampered,
            "confidence": result.confidence, "token_source": result.token_source}
