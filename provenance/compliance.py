"""The compliance report: an organization's signatures per format and the disclosures they carried, and the
verifications of its content, over a period. Counted by the database (GROUP BY), never by loading rows."""

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Count
from django.http import HttpResponse
from django.urls import reverse
from django.utils import timezone

from accounts.models import Organization
from audit.models import AuditEvent
from core.errors import ValidationFailed
from media_codecs import FAMILIES
from provenance.compliance_documents import (
    CONTENT_TYPES,
    ComplianceReport,
    FormatFigures,
    report_csv,
    report_filename,
    report_pdf,
)
from provenance.disclosures import disclosure_counts
from provenance.models import Record

DEFAULT_PERIOD = timedelta(days=30)


@dataclass(frozen=True)
class Period:
    since: datetime  # inclusive
    until: datetime  # exclusive


def report_period(*, since: datetime | None, until: datetime | None) -> Period:
    """The period a request asks for: `until` defaults to now, `since` to 30 days before `until`.

    Raises ValidationFailed when `since` is not before `until`."""
    until = until or timezone.now()
    since = since or _days_before(until, DEFAULT_PERIOD)
    if since >= until:
        raise ValidationFailed(details={"from": ["Must be earlier than `to` (default: now)."]})
    return Period(since=since, until=until)


def _days_before(moment: datetime, period: timedelta) -> datetime:
    try:
        return moment - period
    except OverflowError:  # a `to` in the first days of year 1
        return datetime.min.replace(tzinfo=moment.tzinfo)


def detection_tool_url() -> str:
    """The public verify page's absolute address, from the configured public base URL (as emailed links are)."""
    return settings.PUBLIC_BASE_URL + reverse("dashboard:verify")


def compliance_report(*, org: Organization, period: Period) -> ComplianceReport:
    """The organization's report for `period`: two aggregate queries, whatever the number of records."""
    return ComplianceReport(
        organization_id=str(org.pk), organization_name=org.name, since=period.since, until=period.until,
        generated_at=timezone.now(), formats=_format_figures(org, period), verifications=_verifications(org, period),
        detection_tool_url=detection_tool_url())


def compliance_download(*, report: ComplianceReport, format: str) -> HttpResponse:
    """The report as a `format` (csv or pdf) attachment: the API and the dashboard answer the same bytes."""
    body = report_csv(report) if format == "csv" else report_pdf(report)
    response = HttpResponse(body, content_type=CONTENT_TYPES[format])
    response["Content-Disposition"] = f'attachment; filename="{report_filename(report, format)}"'
    response["Cache-Control"] = "no-store"  # an organization's figures: never kept by a shared cache
    return response


def _format_figures(org: Organization, period: Period) -> tuple[FormatFigures, ...]:
    # One row per (format, disclosures) pair present: at most a few dozen, summed here per format.
    groups = (Record.objects.for_org(org).filter(signed_at__gte=period.since, signed_at__lt=period.until)
              .order_by().values_list("format", "disclosures").annotate(count=Count("*")))
    by_format: dict[str | None, dict[int | None, int]] = {family: {} for family in (*FAMILIES, None)}
    for format, flags, count in groups:
        by_format.setdefault(format, {})[flags] = count
    return tuple(_figures(format, counts) for format, counts in by_format.items())


def _figures(format: str | None, counts: dict[int | None, int]) -> FormatFigures:
    known = {flags: count for flags, count in counts.items() if flags is not None}
    return FormatFigures(format=format, signatures=sum(counts.values()), disclosures=disclosure_counts(known),
                         not_recorded=counts.get(None, 0))


def _verifications(org: Organization, period: Period) -> int:
    # Verification writes one `verify` event per verified record, in the record's organization
    # (verification/services.py, _announce).
    return AuditEvent.objects.for_org(org).filter(type=AuditEvent.Type.VERIFY, timestamp__gte=period.since,
                                                  timestamp__lt=period.until).count()
