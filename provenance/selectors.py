"""Reads of records: public ones by id, and the organization's own for the dashboard."""

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime

from django.db import connection
from django.db.models import CharField, Count
from django.db.models.functions import Cast, Substr, TruncDate

from accounts.models import Organization
from core.errors import Forbidden, NotFound
from core.keyring import token_mac_keys
from core.paging import Page, offset_page, page_of
from provenance.models import Record
from provenance.tokens import mint_token, parse_token

# A record's `log` object (pending, or its index and inclusion proof) is built by the transparency log, which
# sits above provenance (it reads and numbers the records): it registers its reader in TransparencyConfig.ready().
_log_reader: Callable[[list[Record]], dict[uuid.UUID, dict]] | None = None


def record_log_reader_register(reader: Callable[[list[Record]], dict[uuid.UUID, dict]]) -> None:
    global _log_reader
    _log_reader = reader


def record_logs(records: list[Record]) -> dict[uuid.UUID, dict]:
    """Each record's `log` object, by id (the transparency log's `record_logs`: one query at most)."""
    if _log_reader is None:
        raise RuntimeError("No transparency log reader registered: the transparency app is not installed or ready.")
    return _log_reader(records)


def record_token(record_id: uuid.UUID) -> str:
    """The record's `svc_` token (deterministic: the same record always has the same token)."""
    return mint_token(record_id, token_mac_keys()[0])


def record_id_from_token(token: str) -> uuid.UUID:
    """The record id a `svc_` token carries. Raises InvalidToken for anything altered or malformed."""
    return parse_token(token, token_mac_keys())


def public_record_get(*, record_id: uuid.UUID) -> Record:
    """Public: one record with what its JSON needs, its token attached. Raises NotFound."""
    record = Record.objects.select_related("org", "key").filter(pk=record_id).first()
    if record is None:
        raise NotFound("Record not found.")
    record.token = record_token(record.pk)
    return record


def public_record_detail(*, record_id: uuid.UUID) -> Record:
    """Public: the record as GET /v1/records/:id shows it, with its transparency `log` (one more query
    once it is integrated, none while pending). Raises NotFound."""
    record = public_record_get(record_id=record_id)
    record.log = record_logs([record])[record.pk]
    return record


def record_for_embed(*, org: Organization, record_id: uuid.UUID) -> Record:
    """A record whose signed asset the caller may embed a C2PA manifest into. Records are public, so
    another organization's answers 403 (the spec's Errors table), not 404. Raises NotFound, Forbidden."""
    record = Record.objects.select_related("generator", "upstream_manifest").filter(pk=record_id).first()
    if record is None:
        raise NotFound("Record not found.")
    if record.generator.org_id != org.pk:
        raise Forbidden("This record's generator belongs to another organization.")
    return record


def record_page(*, org: Organization, number: int, per_page: int) -> Page:
    """One page of the organization's records, newest first, each with its generator's name.

    Only the listed columns are read (no signatures); the index record_org_newest serves the order.
    """
    records = (Record.objects.for_org(org).select_related("generator")
               .only("id", "model", "format", "signed_at", "generator__id", "generator__name", "generator__mode"))
    return page_of(records, number=number, per_page=per_page)


@dataclass(frozen=True)
class RecordFilters:
    """GET /v1/records' filters; each one given narrows the list (signed_at from <= t < to)."""

    generator_id: uuid.UUID | None = None
    model: str | None = None
    format: str | None = None
    signed_from: datetime | None = None
    signed_to: datetime | None = None


def record_list(*, org: Organization, filters: RecordFilters, page: int, limit: int) -> tuple[list[Record], int]:
    """One page of the organization's records, newest first, each as GET /v1/records/:id shows it, and how
    many match in all. Three queries whatever the page size: the count, the page (with organization and
    key), and one read of the log's tiles for every integrated record's proof.

    Indexes serve each filter newest first (provenance/models.py): record_org_newest (also the date range),
    record_generator_newest, record_org_model_newest and record_org_format_newest.
    """
    records = _filtered(Record.objects.for_org(org), filters)
    total = records.count()
    rows = offset_page(records.select_related("org", "key").order_by("-signed_at", "-id"), page=page, limit=limit)
    logs = record_logs(rows)
    for record in rows:
        record.token = record_token(record.pk)
        record.log = logs[record.pk]
    return rows, total


def _filtered(records, filters: RecordFilters):
    conditions = {"generator_id": filters.generator_id, "model": filters.model, "format": filters.format,
                  "signed_at__gte": filters.signed_from, "signed_at__lt": filters.signed_to}
    return records.filter(**{name: value for name, value in conditions.items() if value is not None})


def signatures_per_day(*, org: Organization, since: datetime) -> dict[date, int]:
    """How many records the organization signed on each UTC day from `since`, days without any left out."""
    rows = (Record.objects.for_org(org).filter(signed_at__gte=since)
            .annotate(day=_utc_day("signed_at")).values("day").annotate(count=Count("id")).order_by("day"))
    return {_as_date(row["day"]): row["count"] for row in rows}


def _utc_day(field: str):
    # SQLite stores UTC timestamps as ISO text, whose first 10 characters are the day: Django's TruncDate
    # there calls back into Python for every row (10,000 records took 140 ms). PostgreSQL truncates natively.
    if connection.vendor == "sqlite":
        return Substr(Cast(field, output_field=CharField()), 1, 10)
    return TruncDate(field)


def _as_date(value: date | str) -> date:
    return value if isinstance(value, date) else date.fromisoformat(value)
