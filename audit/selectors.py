"""Reads of an organization's audit log, newest first (the index audit_org_newest serves them all)."""

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from uuid import UUID

from django.db.models import Q, QuerySet, TextField
from django.db.models.functions import Cast

from accounts.models import Organization, User
from audit.models import AuditEvent
from audit.wording import Names
from core.paging import Page, page_of

# Rows per query of an export: big enough that the per-query cost vanishes, small enough that a page
# (about 0.5 MB of rows) is nothing beside a worker's resident memory (docs/performance.md, "Audit export").
EXPORT_PAGE_SIZE = 2000


@dataclass(frozen=True)
class AuditFilter:
    """Which events a list or an export covers: one type, and the half-open time range [since, until)."""

    type: str | None = None
    since: datetime | None = None  # inclusive
    until: datetime | None = None  # exclusive


NO_FILTER = AuditFilter()


def audit_events(*, org: Organization, filters: AuditFilter = NO_FILTER) -> QuerySet:
    """The organization's audit events that match `filters`, newest first (ties: higher id first)."""
    events = AuditEvent.objects.for_org(org)
    if filters.type is not None:
        events = events.filter(type=filters.type)
    if filters.since is not None:
        events = events.filter(timestamp__gte=filters.since)
    if filters.until is not None:
        events = events.filter(timestamp__lt=filters.until)
    return events.order_by("-timestamp", "-id")


def audit_page(*, org: Organization, number: int, per_page: int, filters: AuditFilter = NO_FILTER) -> Page:
    """One page of the organization's audit events, newest first (the API's list and the dashboard's page);
    never counts the log."""
    return page_of(audit_events(org=org, filters=filters), number=number, per_page=per_page)


# Which metadata ids audit_names resolves: key -> (the Names field it fills, the organization's rows, the column
# shown). Generators and webhook endpoints live in apps above audit, which register theirs in their
# AppConfig.ready(); members (accounts, below audit) are named here.
_NAMED_IDS: dict[str, tuple[str, Callable[[Organization], QuerySet], str]] = {
    "actor_id": ("users", lambda org: User.objects.filter(org=org), "email"),
}


def audit_names_register(*, key: str, names: str, rows: Callable[[Organization], QuerySet], column: str) -> None:
    """Have audit_names show `column` of `rows(org)` for the ids under metadata `key`, in Names.`names`."""
    _NAMED_IDS[key] = (names, rows, column)


def audit_count(*, org: Organization, filters: AuditFilter = NO_FILTER) -> int:
    """How many of the organization's audit events match `filters` (the API list's `total`)."""
    return audit_events(org=org, filters=filters).count()


def audit_names(*, org: Organization, events: list[AuditEvent]) -> Names:
    """What the generator, member and webhook ids in `events`' metadata stand for, in the organization.

    One query per kind of id present (none when a page names none); ids of other organizations, or
    of rows since deleted, are simply absent.
    """
    wanted = {key: set() for key in _NAMED_IDS}
    for event in events:
        if isinstance(event.metadata, dict):
            for key, ids in wanted.items():
                if _is_uuid(event.metadata.get(key)):
                    ids.add(event.metadata[key])
    return Names(**{names: _names(rows(org), wanted[key], column)
                    for key, (names, rows, column) in _NAMED_IDS.items()})


def _names(queryset: QuerySet, ids: set[str], field: str) -> dict[str, str]:
    if not ids:
        return {}
    return {str(pk): value for pk, value in queryset.filter(pk__in=ids).values_list("pk", field)}


def _is_uuid(value) -> bool:
    try:
        UUID(value)
    except (TypeError, ValueError, AttributeError):
        return False
    return True


def audit_recent(*, org: Organization, limit: int) -> list[AuditEvent]:
    """The organization's `limit` newest audit events."""
    return list(audit_events(org=org)[:limit])


ExportRow = tuple[UUID, str, str, str]  # event id; type; timestamp and metadata as the database's text


def audit_export_pages(*, org: Organization, filters: AuditFilter = NO_FILTER,
                       size: int | None = None) -> Iterator[list[ExportRow]]:
    """The matching events as lists of at most `size` (EXPORT_PAGE_SIZE) rows, newest first, one query per list.

    Keyset paging: each query starts below the last row of the previous one, on (timestamp, id), so
    every query reads `size` rows off the index whatever the depth (an OFFSET would rescan everything
    before it), and memory holds one list at a time. Events written while an export runs are newer than
    its first row and never appear. The timestamp and the metadata come as the database's text (in
    UTC: Django's connections always are), never decoded into Python objects only to be encoded
    again; decoding a timestamp took half of an export's CPU (docs/performance.md, "Audit export").
    """
    size = size or EXPORT_PAGE_SIZE
    rows = audit_events(org=org, filters=filters).annotate(
        timestamp_text=Cast("timestamp", output_field=TextField()),
        metadata_text=Cast("metadata", output_field=TextField())).values_list(
        "id", "type", "timestamp_text", "metadata_text")
    page = list(rows[:size])
    while page:
        yield page
        if len(page) < size:
            return
        last_id, _, last_text, _ = page[-1]
        last_timestamp = _utc(datetime.fromisoformat(last_text))
        # timestamp <= t on its own lets the index bound the scan; the OR then skips the ties already sent.
        below = rows.filter(Q(timestamp__lt=last_timestamp) | Q(id__lt=last_id), timestamp__lte=last_timestamp)
        page = list(below[:size])


def _utc(moment: datetime) -> datetime:
    """SQLite's text carries no offset; it is UTC, like PostgreSQL's."""
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
