"""The Compliance page in Chromium: the period form, the figures, CSV and PDF downloads from Growth, and the
disabled downloads with an upgrade hint below it."""

import csv
import io
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from provenance.models import Record
from provenance.services import RecordDraft, record_create
from tests import factories
from tests.browser.page_checks import look, sign_in

pytestmark = pytest.mark.django_db(transaction=True)
OWNER = "owner@example.com"


def _org_with_records(plan: str):
    """Three image records signed in March 2026 (two marked), one in April, and their owner."""
    org = factories.make_org(plan=plan, name="Acme Labs")
    factories.make_user(org=org, email=OWNER)
    key = factories.make_generator(org=org, formats=["image"]).keys.get()
    for day, flags in [(1, 3), (2, 3), (31, 2), (40, 3)]:
        record = record_create(org=org, draft=RecordDraft(key=key, content_hash="sha3-256:" + "2" * 64, model="m",
                                                          watermark_id="none", signature=b"\0", format="image",
                                                          disclosures=flags))
        Record.objects.filter(pk=record.pk).update(signed_at=datetime(2026, 3, 1, tzinfo=UTC) + timedelta(days=day - 1))
    return org


def _choose_march(page) -> None:
    page.get_by_label("From (UTC)").fill("2026-03-01")
    page.get_by_label("To (UTC, included)").fill("2026-03-31")
    with page.expect_navigation():
        page.get_by_role("button", name="Show").click()


def test_a_growth_owner_reads_the_report_and_downloads_it(page):
    _org_with_records("growth")
    sign_in(page, OWNER)
    page.get_by_role("link", name="Compliance").click()
    page.wait_for_url("**/dashboard/compliance")
    _choose_march(page)
    image_row = page.locator("tbody tr").first.inner_text()
    assert image_row.split()[:5] == ["image", "3", "2", "3", "0"], image_row
    look(page, "compliance-growth")

    with page.expect_download() as started:
        page.get_by_role("link", name="CSV", exact=True).click()
    rows = list(csv.reader(io.StringIO(Path(started.value.path()).read_text(), newline="")))
    assert rows[1][:4] == ["image", "3", "2", "3"]
    with page.expect_download() as started:
        page.get_by_role("link", name="PDF", exact=True).click()
    assert started.value.suggested_filename.endswith(".pdf")
    text = subprocess.run(["pdftotext", started.value.path(), "-"], capture_output=True, check=True).stdout
    assert b"Acme Labs" in text


def test_below_growth_the_downloads_are_disabled_and_bad_dates_answer_the_form(page):
    _org_with_records("free")
    sign_in(page, OWNER)
    page.goto("/dashboard/compliance?from=2026-03-05&to=2026-03-01")
    assert "The last day is before the first." in page.inner_text("form.filters")
    _choose_march(page)
    assert page.locator("tbody tr").first.inner_text().split()[:2] == ["image", "3"]
    assert page.locator('a[aria-disabled="true"]').count() == 2
    assert page.get_by_role("link", name="See the plans").get_attribute("href").endswith("?plan=growth")
    look(page, "compliance-free")
