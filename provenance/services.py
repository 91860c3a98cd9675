"""Creating provenance records: the one path every signature takes into the database."""

import datetime
import functools
import logging
import os
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace

from django.conf import settings
from django.db import connection, transaction

from accounts.gates import require_feature
from accounts.models import Organization
from audit.services import audit_write_many
from billing.services import usage_consume, usage_refused
from core import tsa
from core.errors import (
    ApiError,
    FormatNotSupported,
    GeneratorServerManaged,
    ServiceUnavailable,
    SignatureInvalid,
    SignatureLimitReached,
    ValidationFailed,
)
from core.hot_sql import RowInserter
from generators.models import GeneratorKey
from generators.selectors import generator_for_signing
from media_codecs.c2pa import UpstreamManifest
from provenance.disclosures import CarriedDisclosure
from provenance.models import FingerprintKind, Record, RecordFingerprint, RecordUpstreamManifest
from provenance.phash_bands import signed_value
from record_format import crypto
from record_format.payload import SIGNED_FIELDS, signed_payload_bytes
from webhooks.events import events_emit

logger = logging.getLogger(__name__)

PARALLEL_VERIFY_MIN = 8  # signatures per thread below which a hand-off costs more than it saves

NO_DISCLOSURES = int(CarriedDisclosure(0))

_insert_records = RowInserter(Record).insert  # bulk_create with its SQL built once (core/hot_sql.py)


@dataclass(frozen=True)
class RecordDraft:
    """A record ready to store: its signature already made (sign) or checked (records)."""

    key: GeneratorKey
    content_hash: str
    model: str
    watermark_id: str
    signature: bytes
    phash: str | None = None
    format: str | None = None
    fingerprint_kind: str | None = None  # what `phash` is: the codec's kind (sign), image-phash (records)
    more_fingerprints: tuple[str, ...] = ()  # further values of the same kind (a video's later frames)
    record_id: uuid.UUID | None = None  # preset when the token was minted before storing (POST /v1/sign)
    upstream: UpstreamManifest | None = None  # the C2PA manifest the upload carried (POST /v1/sign)
    signature_timestamp: bytes | None = None  # already stamped (POST /v1/sign stamps with its manifest)
    signed_at: datetime.datetime | None = None  # preset when a manifest states it (POST /v1/sign with c2pa)
    disclosures: int | None = None  # the CarriedDisclosure flags the signed file carries; None: not recorded


def record_create(*, org: Organization, draft: RecordDraft) -> Record:
    """Store one signed record; count it, audit `sign` and announce `record.created` in the same transaction.

    Raises SignatureLimitReached (nothing stored) when the free plan's allowance is used up.
    """
    return records_create(org=org, drafts=[draft])[0]


def records_create(*, org: Organization, drafts: list[RecordDraft]) -> list[Record]:
    """Store several records all-or-nothing; a batch of N counts N signatures.

    With a time-stamp authority configured, each signature not yet stamped is stamped first, outside the
    transaction; an authority that does not answer stops the request before anything is stored (503).
    """
    drafts = _stamped(drafts)
    records = [_record_from(org, draft) for draft in drafts]
    try:
        with transaction.atomic():
            _insert_records(records)
            _insert_more_fingerprints(records, drafts)
            _insert_upstream_manifests(records, drafts)
            audit_write_many(org=org, type="sign", metadatas=[_sign_metadata(r) for r in records])
            usage = usage_consume(org=org, count=len(records))  # last: the counter row stays locked until commit only
            # One delivery round after commit: a record.created per record, then any quota crossing.
            events_emit(org=org, events=[*(("record.created", _event_data(r)) for r in records), *usage.events])
    except SignatureLimitReached:
        usage_refused(org=org)  # after the rollback, so its quota.limit is not rolled back with the records
        raise
    return records


def _stamped(drafts: list[RecordDraft]) -> list[RecordDraft]:
    unstamped = [index for index, draft in enumerate(drafts) if draft.signature_timestamp is None]
    if not unstamped or not settings.TSA_URL:
        return drafts
    tokens = record_signatures_stamp([drafts[index].signature for index in unstamped])
    stamped = list(drafts)
    for index, token in zip(unstamped, tokens, strict=True):
        stamped[index] = replace(drafts[index], signature_timestamp=token)
    return stamped


def record_signatures_stamp(signatures: list[bytes]) -> list[bytes | None]:
    """RFC 3161 tokens over record signatures from the deployment's authority (None each without one).

    Raises ServiceUnavailable when the authority cannot be reached or answers badly: a record promised a
    trusted time is not stored without one."""
    try:
        return tsa.stamp_many(signatures)
    except tsa.TimestampUnavailable as error:
        logger.warning("Time-stamp authority unavailable: %s", error)
        raise ServiceUnavailable("The time-stamp authority did not answer; nothing was signed. Try again "
                                 "shortly.") from None


@dataclass(frozen=True)
class Submission:
    """A client-managed record as POSTed: fields already shape-checked by the input serializer."""

    generator_id: str
    content_hash: str
    model: str
    watermark_id: str
    signature: bytes
    signed_payload: dict
    phash: str | None = None
    format: str | None = None  # the content's family, when the client says it


def record_keep_mark_in_file(*, record: Record, found: bool) -> None:
    """Keep what the watermark reader found in the record's own file (a verification read it unchanged).

    Only the first answer is written: every later read of that file finds the same. One UPDATE, no
    transaction; two first verifications at once write the same value."""
    Record.objects.filter(pk=record.pk, mark_in_file__isnull=True).update(mark_in_file=found)
    record.mark_in_file = found


def record_submit(*, org: Organization, submission: Submission) -> Record:
    """POST /v1/records: check generator, payload and ML-DSA-65 signature, then store.

    Raises NotFound, Forbidden, GeneratorServerManaged, ValidationFailed, SignatureInvalid,
    SignatureLimitReached.
    """
    draft, message = _unverified_draft(org, submission, {})
    if not _signature_holds(draft, message):
        raise SignatureInvalid()
    return record_create(org=org, draft=draft)


def record_submit_batch(*, org: Organization, submissions: list[Submission]) -> list[Record]:
    """POST /v1/records/batch: every item is checked before anything is stored; all or nothing.

    Generators and payloads are checked in order (they read the database); the signatures are then
    verified in parallel. Raises PlanRequired / EmailNotVerified (gates), ValidationFailed naming
    every failing index.
    """
    require_feature(org, "batch_records")
    keys_by_generator: dict[str, GeneratorKey] = {}
    pending: dict[int, tuple[RecordDraft, bytes]] = {}
    failures: dict[str, list[str]] = {}
    for index, submission in enumerate(submissions):
        try:
            pending[index] = _unverified_draft(org, submission, keys_by_generator)
        except ApiError as error:
            failures[str(index)] = [f"{error.code}: {error.message}"]
    verdicts = _verify_in_parallel(list(pending.values()))
    for index, holds in zip(pending, verdicts, strict=True):
        if not holds:
            failures[str(index)] = [f"{SignatureInvalid.code}: {SignatureInvalid.message}"]
    if failures:
        raise ValidationFailed("Some records failed; nothing was stored.",
                               details={"records": dict(sorted(failures.items(), key=lambda item: int(item[0])))})
    return records_create(org=org, drafts=[draft for draft, _ in pending.values()])


def _unverified_draft(org: Organization, submission: Submission,
                      key_cache: dict[str, GeneratorKey]) -> tuple[RecordDraft, bytes]:
    """Everything but the signature check: generator, mode and payload. Returns the draft and signed bytes."""
    key = key_cache.get(submission.generator_id)
    if key is None:
        key = key_cache[submission.generator_id] = generator_for_signing(org=org, generator_id=submission.generator_id)
    if key.generator.is_server_managed:
        raise GeneratorServerManaged()
    expected = {field: getattr(submission, field) for field in SIGNED_FIELDS}
    if submission.signed_payload != expected:
        raise ValidationFailed(details={"signed_payload": [f"Must equal {{{', '.join(SIGNED_FIELDS)}}} sent."]})
    if submission.format and submission.format not in key.generator.supported_formats:
        raise FormatNotSupported(f"This generator does not sign {submission.format} content.")
    draft = RecordDraft(key=key, content_hash=submission.content_hash, model=submission.model,
                        watermark_id=submission.watermark_id, signature=submission.signature, phash=submission.phash,
                        fingerprint_kind=_client_fingerprint_kind(submission), format=submission.format,
                        disclosures=NO_DISCLOSURES)  # the service wrote no file: it disclosed nothing itself
    return draft, signed_payload_bytes(**expected)


def _client_fingerprint_kind(submission: Submission) -> str | None:
    """What a client's `phash` is: a video's first-frame pHash when the record says `video`, else the image
    pHash (imagehash.phash, 64 bits), as before `format` existed. Audio and text have no pHash.

    Raises ValidationFailed for a `phash` on audio or text."""
    if not submission.phash:
        return None
    if submission.format in ("audio", "text"):
        raise ValidationFailed(details={"phash": [f"{submission.format.capitalize()} content has no pHash."]})
    return FingerprintKind.VIDEO_PHASH if submission.format == "video" else FingerprintKind.IMAGE_PHASH


def _signature_holds(draft: RecordDraft, message: bytes) -> bool:
    return crypto.verify(bytes(draft.key.public_key), message, draft.signature)


def _verify_in_parallel(items: list[tuple[RecordDraft, bytes]]) -> list[bool]:
    # pyca's ML-DSA-65 verify releases the GIL, so threads verify in parallel (docs/performance.md,
    # "Figures behind code comments"). One chunk per
    # core, the calling thread taking the first: a task per signature cost more in hand-offs than
    # it saved once the workers were busy.
    chunks = max(1, min(os.cpu_count() or 1, len(items) // PARALLEL_VERIFY_MIN))
    if chunks == 1:
        return _verify_chunk(items)
    parts = [items[start::chunks] for start in range(chunks)]
    futures = [_verify_pool().submit(_verify_chunk, part) for part in parts[1:]]
    results = [_verify_chunk(parts[0]), *(future.result() for future in futures)]
    verdicts = [False] * len(items)
    for start, part_verdicts in enumerate(results):
        verdicts[start::chunks] = part_verdicts
    return verdicts


def _verify_chunk(items: list[tuple[RecordDraft, bytes]]) -> list[bool]:
    return [_signature_holds(draft, message) for draft, message in items]


@functools.cache
def _verify_pool() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=os.cpu_count() or 2, thread_name_prefix="mldsa-verify")


def _record_from(org: Organization, draft: RecordDraft) -> Record:
    record = Record(
        id=draft.record_id or uuid.uuid4(), org=org, generator_id=draft.key.generator_id, key=draft.key,
        model=draft.model, watermark_id=draft.watermark_id, content_hash=draft.content_hash,
        signature=draft.signature, signature_timestamp=draft.signature_timestamp, format=draft.format,
        disclosures=draft.disclosures)
    if draft.signed_at is not None:
        record.signed_at = draft.signed_at
    if draft.more_fingerprints and not draft.phash:
        raise ValueError("further fingerprints need a first one")  # a programming error, as below
    if draft.phash:
        if not draft.fingerprint_kind:
            raise ValueError("a fingerprint needs its kind")  # a programming error: codecs declare theirs
        record.phash, record.fingerprint_kind = draft.phash, draft.fingerprint_kind
        record.phash_value = signed_value(draft.phash)  # a trigger adds the value to Fingerprint
    return record


def _insert_more_fingerprints(records: list[Record], drafts: list[RecordDraft]) -> None:
    more = [RecordFingerprint(record=record, kind=record.fingerprint_kind, value=signed_value(value),
                              signed_at=record.signed_at)
            for record, draft in zip(records, drafts, strict=True) for value in draft.more_fingerprints
            if value != draft.phash]  # a trigger adds each value to Fingerprint
    if more:
        RecordFingerprint.objects.bulk_create(more)


def _insert_upstream_manifests(records: list[Record], drafts: list[RecordDraft]) -> None:
    kept = [RecordUpstreamManifest(record=record, store=draft.upstream.store, format=draft.upstream.format,
                                   label=draft.upstream.label, validation_results=draft.upstream.validation_results)
            for record, draft in zip(records, drafts, strict=True) if draft.upstream is not None]
    if kept:
        RecordUpstreamManifest.objects.bulk_create(kept)


def _sign_metadata(record: Record) -> dict:
    return {"record_id": str(record.pk), "generator_id": str(record.generator_id), "model": record.model}


def _event_data(record: Record) -> dict:
    """record.created's `data`: what a receiver needs to find and check the record."""
    return {**_sign_metadata(record), "content_hash": record.content_hash, "watermark_id": record.watermark_id,
            "signed_at": record.signed_at.isoformat().replace("+00:00", "Z")}


def record_log_indices_assign(*, record_ids: list, first_index: int) -> None:
    """Give the records consecutive transparency-log indices from `first_index`, in the caller's transaction
    (the sequencer's batch); raises RuntimeError, rolling the batch back, if any already had one.

    Raw SQL: one UPDATE for the batch on PostgreSQL (from two arrays) rather than one per record."""
    pk = Record._meta.pk
    ids = [pk.get_db_prep_value(record_id, connection) for record_id in record_ids]
    indices = list(range(first_index, first_index + len(ids)))
    table = connection.ops.quote_name(Record._meta.db_table)
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(f"UPDATE {table} AS r SET log_index = v.log_index "  # noqa: S608 (a quoted name)
                           "FROM unnest(%s::uuid[], %s::bigint[]) AS v(id, log_index) "
                           "WHERE r.id = v.id AND r.log_index IS NULL", [ids, indices])
            updated = cursor.rowcount
        else:
            updated = 0
            for record_id, index in zip(ids, indices, strict=True):
                cursor.execute(f"UPDATE {table} SET log_index = %s WHERE id = %s AND log_index IS NULL",  # noqa: S608
                               [index, record_id])
                updated += cursor.rowcount
    if updated != len(ids):
        raise RuntimeError(f"{len(ids) - updated} records were integrated by someone else; batch rolled back")
