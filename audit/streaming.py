"""An audit export as an HTTP download: the API route and the dashboard page answer the same bytes.

An organization runs at most EXPORTS_AT_ONCE exports at a time: each holds a worker thread for as long
as it streams (seconds for a million events, longer for a slow reader without the proxy), so a loop of
export requests could otherwise take every worker. The slot is a cache key taken before the response
starts and given back when the server closes the response (WSGI always does, finished or not); a
worker killed mid-export leaves its slot to expire after EXPORT_SLOT_SECONDS.
"""

from collections.abc import Iterator

from django.core.cache import cache
from django.http import StreamingHttpResponse
from django.utils import timezone

from accounts.models import Organization
from audit.export import CONTENT_TYPES, export_chunks, export_filename
from audit.selectors import AuditFilter, audit_export_pages
from core.errors import RateLimited

EXPORTS_AT_ONCE = 2
EXPORT_SLOT_SECONDS = 600
RETRY_AFTER_SECONDS = 10


class _SlotHeldBody:
    """The body's chunks; closing it (the server does, once the response is done) frees the slot."""

    def __init__(self, chunks: Iterator[bytes], slot: str):
        self.chunks, self.slot = chunks, slot

    def __iter__(self) -> Iterator[bytes]:
        return self.chunks

    def close(self) -> None:
        cache.delete(self.slot)


def _export_slot(org: Organization) -> str:
    """Take one of the organization's export slots; RateLimited (429) when all are taken."""
    for number in range(EXPORTS_AT_ONCE):
        slot = f"audit-export:{org.pk}:{number}"
        if cache.add(slot, True, EXPORT_SLOT_SECONDS):
            return slot
    raise RateLimited(f"{EXPORTS_AT_ONCE} exports of this organization are running; try again when one ends.",
                      headers={"Retry-After": str(RETRY_AFTER_SECONDS)})


def audit_export_response(*, org: Organization, filters: AuditFilter, format: str) -> StreamingHttpResponse:
    """The organization's matching events, newest first, streamed as a `format` attachment.

    Nothing is read before the first chunk is sent: the queries run as the body is written, one page
    of rows at a time, so a worker holds one page whatever the size of the log. Raises RateLimited when
    the organization already runs EXPORTS_AT_ONCE exports.
    """
    slot = _export_slot(org)
    body = _SlotHeldBody(export_chunks(format, audit_export_pages(org=org, filters=filters)), slot)
    response = StreamingHttpResponse(body, content_type=CONTENT_TYPES[format])
    response["Content-Disposition"] = f'attachment; filename="{export_filename(format, timezone.now())}"'
    response["Cache-Control"] = "no-store"  # an organization's log: never kept by a shared cache
    return response
