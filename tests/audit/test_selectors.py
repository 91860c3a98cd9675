"""The export's reads: keyset pages of bounded size, one query each, in the list's order, whatever the depth."""

import json
import tracemalloc
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from audit.models import AuditEvent
from audit.selectors import AuditFilter, audit_events, audit_export_pages
from audit.services import audit_write_many
from tests import factories

pytestmark = pytest.mark.django_db


def _fill(org, n: int, *, same_second: bool = False, padding: int = 0) -> None:
    audit_write_many(org=org, type="sign", metadatas=[{"n": i, "pad": "x" * padding} for i in range(n)])
    if not same_second:  # one event a second, n-1 the newest
        now = timezone.now().replace(microsecond=0)
        for event in AuditEvent.objects.filter(org=org):
            AuditEvent.objects.filter(pk=event.pk).update(timestamp=now - timedelta(seconds=n - event.metadata["n"]))


def test_each_page_is_one_query_of_at_most_size_rows(org):
    _fill(org, 1050)
    with CaptureQueriesContext(connection) as queries:
        pages = list(audit_export_pages(org=org, size=100))
    assert [len(page) for page in pages] == [100] * 10 + [50]
    assert len(queries) == 11
    assert all("LIMIT 100" in query["sql"] for query in queries.captured_queries)
    assert all("OFFSET" not in query["sql"] for query in queries.captured_queries)


def test_pages_follow_the_lists_order_and_never_repeat_or_skip_even_on_equal_timestamps(org):
    _fill(org, 777, same_second=True)  # one INSERT: every event has the same timestamp
    exported = [row[0] for page in audit_export_pages(org=org, size=50) for row in page]
    assert exported == list(audit_events(org=org).values_list("id", flat=True))
    assert len(set(exported)) == 777


def test_an_exact_multiple_of_the_page_size_ends_with_one_empty_query(org):
    _fill(org, 200)
    with CaptureQueriesContext(connection) as queries:
        pages = list(audit_export_pages(org=org, size=100))
    assert [len(page) for page in pages] == [100, 100] and len(queries) == 3


def test_rows_carry_the_metadata_as_json_text_and_respect_filters_and_the_organization(org, other_org):
    _fill(org, 30)
    audit_write_many(org=other_org, type="sign", metadatas=[{"n": -1}] * 5)
    newest = AuditEvent.objects.filter(org=org).order_by("-timestamp")[9].timestamp
    rows = [row for page in audit_export_pages(org=org, filters=AuditFilter(until=newest), size=7) for row in page]
    assert [json.loads(row[3])["n"] for row in rows] == list(range(19, -1, -1))
    assert {row[1] for row in rows} == {"sign"}
    assert list(audit_export_pages(org=org, filters=AuditFilter(type="verify"))) == []


def _export_peak(key_client, events: int, format: str) -> tuple[int, int]:
    """(bytes streamed, peak bytes allocated while streaming) for an export of `events` 600-byte events."""
    org = factories.make_org(plan="growth")
    factories.make_user(org=org)
    _fill(org, events, same_second=True, padding=600)
    response = key_client(org).get("/v1/audit/export", {"format": format})
    total = 0
    tracemalloc.start()
    try:
        for chunk in response.streaming_content:
            total += len(chunk)
        return total, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("format", ["csv", "json"])
def test_streaming_an_export_holds_one_page_whatever_the_size_of_the_log(format, monkeypatch, key_client):
    """Memory bound by allocation, not time: with 500-row pages the peak while 12,000 events (over 7 MB
    of body) go through the whole route stays under 3 MB, no more than with 3,000 events; holding the
    rows or the body at once would take several times that."""
    monkeypatch.setattr("audit.selectors.EXPORT_PAGE_SIZE", 500)
    _, small_peak = _export_peak(key_client, 3_000, format)
    total, peak = _export_peak(key_client, 12_000, format)
    assert total > 12_000 * 600
    assert peak < 3 * 1024 * 1024, f"{peak} bytes at peak"
    assert peak < small_peak * 1.2, (small_peak, peak)
