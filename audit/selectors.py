"""Reads of an organization's audit log, newest first (the index audit_org_newest serves both)."""

from accounts.models import Organization
from audit.models import AuditEvent
from config.paging import Page, page_of


def audit_page(*, org: Organization, number: int, per_page: int) -> Page:
    """One page of the organization's audit events, newest first; never counts the log."""
    return page_of(AuditEvent.objects.for_org(org), number=number, per_page=per_page)


def audit_recent(*, org: Organization, limit: int) -> list[AuditEvent]:
    """The organization's `limit` newest audit events."""
    return list(AuditEvent.objects.for_org(org)[:limit])
