"""An audit export as an HTTP download: the API route and the dashboard page answer the same bytes."""

from django.http import StreamingHttpResponse
from django.utils import timezone

from accounts.models import Organization
from audit.export import CONTENT_TYPES, export_chunks, export_filename
from audit.selectors import AuditFilter, audit_export_pages


def audit_export_response(*, org: Organization, filters: AuditFilter, format: str) -> StreamingHttpResponse:
    """The organization's matching events, newest first, streamed as a `format` attachment.

    Nothing is read before the first chunk is sent: the queries run as the body is written, one page
    of rows at a time, so a worker holds one page whatever the size of the log.
    """
    body = export_chunks(format, audit_export_pages(org=org, filters=filters))
    response = StreamingHttpResponse(body, content_type=CONTENT_TYPES[format])
    response["Content-Disposition"] = f'attachment; filename="{export_filename(format, timezone.now())}"'
    response["Cache-Control"] = "no-store"  # an organization's log: never kept by a shared cache
    return response
