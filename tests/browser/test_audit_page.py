"""The audit page in Chromium: events in words, the GET filters, the export downloads, the note below Growth."""

import csv
import io
import json
from pathlib import Path

import pytest

from audit.services import audit_write
from billing.services import plan_change
from generators.services import generator_revoke
from teams.services import invite_send, member_role_change
from tests import factories
from tests.browser.page_checks import look, sign_in

pytestmark = pytest.mark.django_db(transaction=True)
OWNER = "owner@example.com"


def _busy_org(plan: str):
    """An organization whose log holds a signature, a verification, generator, team, webhook and plan events."""
    org = factories.make_org(plan=plan, name="Acme Labs")
    owner = factories.make_user(org=org, email=OWNER)
    member = factories.make_user(org=org, role="user", email="mia@example.com")
    generator = factories.make_generator(org=org, name="Studio generator")
    for n in range(3):
        audit_write(org=org, type="sign", metadata={"record_id": f"0d6c1f3e-0000-4000-8000-00000000000{n}",
                                                    "generator_id": str(generator.pk), "model": f"dream-{n}"})
    audit_write(org=org, type="verify", metadata={"record_id": "0d6c1f3e-0000-4000-8000-000000000001",
                                                  "authentic": False, "tampered": True, "confidence": "high",
                                                  "token_source": "watermark"})
    invite_send(org=org, inviter=owner, email="new.hire@example.com", role="user")
    member_role_change(org=org, actor=owner, member_id=member.pk, role="user")
    factories.make_webhook(org=org, url="https://93.184.216.34/hooks/provenance", events=["record.created"])
    generator_revoke(generator=generator)
    plan_change(org=org, plan=plan, billing_interval="annual", actor="staff@example.com")
    return org


def _download(page, name: str) -> tuple[str, str]:
    with page.expect_download() as started:
        page.get_by_role("link", name=name, exact=True).click()
    download = started.value
    return download.suggested_filename, Path(download.path()).read_text()


def test_a_growth_owner_reads_filters_and_exports_the_log(page):
    _busy_org("growth")
    sign_in(page, OWNER)
    page.goto("/dashboard/audit")
    table = page.inner_text("table")
    assert "Signed a record with model “dream-2” by generator “Studio generator”." in table
    assert "Verified a record: the content was changed after signing, found through the watermark." in table
    assert f"{OWNER} invited new.hire@example.com to join as member." in table
    assert "Revoked generator “Studio generator”: its signatures no longer verify." in table
    assert "Added the webhook endpoint https://93.184.216.34/hooks/provenance for record.created." in table
    assert "=" not in table
    look(page, "audit-growth")

    page.get_by_label("Event", exact=True).select_option(label="Record signed")
    with page.expect_navigation():
        page.get_by_role("button", name="Show").click()
    assert "type=sign" in page.url
    assert page.locator("tbody tr").count() == 3 and "Verified" not in page.inner_text("table")
    look(page, "audit-filtered")

    filename, body = _download(page, "CSV")
    assert filename.startswith("audit-events-") and filename.endswith(".csv")
    rows = list(csv.reader(io.StringIO(body, newline="")))
    assert rows[0] == ["event_id", "type", "timestamp", "metadata"]
    assert [json.loads(row[3])["model"] for row in rows[1:]] == ["dream-2", "dream-1", "dream-0"]
    filename, body = _download(page, "JSON")
    assert filename.endswith(".json") and [e["type"] for e in json.loads(body)] == ["sign"] * 3

    page.goto("/dashboard/audit?from=2026-03-05&to=2026-03-01")  # a bookmark with the days swapped
    assert "The last day is before the first." in page.inner_text("form.filters")
    look(page, "audit-bad-filter")


def test_below_growth_the_page_explains_that_export_needs_growth(page):
    _busy_org("starter")
    sign_in(page, OWNER)
    page.goto("/dashboard/audit")
    note = page.inner_text(".export")
    assert "needs the Growth plan or above" in note and page.get_by_role("link", name="CSV").count() == 0
    look(page, "audit-starter")
    with page.expect_navigation():
        page.get_by_role("link", name="See the plans").click()
    assert page.url.endswith("/dashboard/billing?plan=growth")
