"""The audit page: events in words, GET filters, export links by plan, and the export download."""

import csv
import io
import json
import re
from datetime import datetime

import pytest

from audit.models import AuditEvent
from audit.services import audit_write
from billing.services import plan_change
from generators.services import generator_revoke, generator_rotate_key
from teams.services import invite_accept, invite_cancel, invite_send, member_remove, member_role_change
from tests import factories
from webhooks.services import webhook_delete, webhook_update

pytestmark = pytest.mark.django_db
PAGE = "/dashboard/audit"
EXPORT = "/dashboard/audit/export"


@pytest.fixture
def growth_owner(growth_org):
    return factories.make_user(org=growth_org, email="owner@example.com")


def _text(response) -> str:
    """The page's visible text, tags dropped and spaces folded."""
    assert response.status_code == 200
    html = response.content.decode()
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html)).replace("&#x27;", "'").replace("&quot;", '"')


def _every_event(org, owner, key_client):
    """One of each event the services write, made through the services and the API."""
    client = key_client(org)
    generator, seed = factories.make_client_generator(org=org, name="Studio gen")
    record = client.post("/v1/records", factories.record_body(generator=generator, seed=seed, model="dream-2"),
                         format="json").json()
    client.post("/v1/verify", {"token": record["token"], "content": io.BytesIO(b"content")}, format="multipart")
    server = factories.make_generator(org=org, name="Server gen")
    generator_rotate_key(generator=server, public_key=None)
    generator_revoke(generator=generator)
    invite = invite_send(org=org, inviter=owner, email="ann@example.com", role="user")
    invite_cancel(org=org, actor=owner, invite_id=invite.pk)
    _, token = factories.make_invite(org=org, inviter=owner, email="bob@example.com", role="user")
    bob = invite_accept(token=token, password=factories.PASSWORD).user
    member_role_change(org=org, actor=owner, member_id=bob.pk, role="admin")
    member_remove(org=org, actor=owner, member_id=bob.pk)
    endpoint, _ = factories.make_webhook(org=org, url="https://93.184.216.34/hook", events=["record.created"])
    webhook_update(endpoint=endpoint, events=["record.created", "generator.revoked"], status="disabled")
    webhook_delete(endpoint=endpoint)
    plan_change(org=org, plan="scale", billing_interval="annual", actor="staff@example.com")
    return record


def test_every_event_the_services_write_reads_as_a_sentence(growth_org, growth_owner, key_client, page_client):
    record = _every_event(growth_org, growth_owner, key_client)
    text = _text(page_client(growth_owner).get(PAGE))
    for sentence in [
        "Registered generator “Studio gen” with its own keys (client-managed).",
        "Signed a record with model “dream-2” by generator “Studio gen”.",
        "Verified a record: authentic, found through the token sent with the request.",
        "Registered generator “Server gen” with keys held by the service.",
        "Rotated the signing key of generator “Server gen”: key",
        "Revoked generator “Studio gen”: its signatures no longer verify.",
        "owner@example.com invited ann@example.com to join as member.",
        "owner@example.com cancelled the invitation of ann@example.com (member).",
        "bob@example.com accepted the invitation and joined as member.",
        "owner@example.com changed the role of bob@example.com from member to admin.",
        "owner@example.com removed bob@example.com (admin) from the team.",
        "Added the webhook endpoint https://93.184.216.34/hook for record.created.",
        "Changed a webhook endpoint since deleted: it now receives record.created, generator.revoked; "
        "turned it off.",
        "Deleted the webhook endpoint https://93.184.216.34/hook.",
        "The plan changed from Growth (billed monthly) to Scale (billed annually), by staff@example.com.",
    ]:
        assert sentence in text, sentence
    assert f"Record {record['record_id']}" in text
    assert "=" not in text.split("What happened", 1)[1]  # no key=value dumps


def test_an_unknown_type_still_reads_as_words(owner_page, org):
    audit_write(org=org, type="api_key.created", metadata={"key_name": "ci", "scopes": ["sign", "verify"]})
    text = _text(owner_page.get(PAGE))
    assert "Api key created. Key name ci · Scopes sign, verify" in text


def test_a_removed_actor_and_a_missing_generator_are_still_described(owner_page, org):
    audit_write(org=org, type="team.invite_sent", metadata={"actor_id": "6f1c1d8e-2b5e-4a54-9b7c-3d1f2e0a9b11",
                                                            "email": "x@example.com", "role": "admin"})
    audit_write(org=org, type="sign", metadata={"record_id": "r1", "model": "m"})
    text = _text(owner_page.get(PAGE))
    assert "A former member invited x@example.com to join as admin." in text
    assert "Signed a record with model “m” by a generator." in text


def test_another_organizations_names_never_appear(owner_page, org, other_org):
    theirs = factories.make_generator(org=other_org, name="Their secret gen")
    audit_write(org=org, type="key_revoked", metadata={"generator_id": str(theirs.pk)})
    text = _text(owner_page.get(PAGE))
    assert "Their secret gen" not in text and "Revoked a generator" in text


# --- filters ----------------------------------------------------------------------------------------

def _at(org, type: str, moment: str, model: str):
    event = audit_write(org=org, type=type, metadata={"model": model})
    AuditEvent.objects.filter(pk=event.pk).update(timestamp=datetime.fromisoformat(moment))


@pytest.fixture
def march(org):
    _at(org, "sign", "2026-03-01T00:00:00+00:00", "first-day")
    _at(org, "sign", "2026-03-02T23:59:59+00:00", "second-day")
    _at(org, "verify", "2026-03-03T12:00:00+00:00", "third-day")
    _at(org, "sign", "2026-03-04T00:00:00+00:00", "fourth-day")


@pytest.mark.parametrize(("query", "shown"), [
    ({}, ["fourth-day", "second-day", "first-day"]),  # verify events show no model
    ({"type": "sign"}, ["fourth-day", "second-day", "first-day"]),
    ({"from": "2026-03-02", "to": "2026-03-03"}, ["second-day"]),  # both days included, in UTC
    ({"from": "2026-03-01", "to": "2026-03-01"}, ["first-day"]),
    ({"to": "2026-03-03", "type": "sign"}, ["second-day", "first-day"]),
])
def test_filters_narrow_the_events_by_type_and_whole_days(owner_page, march, query, shown):
    text = _text(owner_page.get(PAGE, query))
    assert re.findall(r"model “([a-z-]+)”", text) == shown


def test_a_filtered_page_keeps_its_filters_in_the_pager_and_the_form(owner_page, org):
    for n in range(51):
        audit_write(org=org, type="sign", metadata={"model": f"m{n}"})
    audit_write(org=org, type="verify", metadata={})
    html = owner_page.get(PAGE, {"type": "sign"}).content.decode()
    assert 'href="?type=sign&amp;page=2"' in html and '<option value="sign" selected>' in html
    second = owner_page.get(PAGE, {"type": "sign", "page": 2}).content.decode()
    assert "“m0”" in second and 'href="?type=sign&amp;page=1"' in second and "Verified" not in second


@pytest.mark.parametrize("query", [{"from": "yesterday"}, {"to": "2026-02-30"}, {"type": "nonsense"},
                                   {"from": "2026-03-04", "to": "2026-03-01"}])
def test_bad_filters_show_what_is_wrong_and_no_events(owner_page, march, query):
    response = owner_page.get(PAGE, query)
    assert response.status_code == 200
    html = response.content.decode()
    assert 'class="errorlist"' in html and "Fix the filters above" in html and "first-day" not in html


def test_no_match_says_so(owner_page, march):
    assert "No events match these filters." in _text(owner_page.get(PAGE, {"from": "2027-01-01"}))


# --- export links and downloads ---------------------------------------------------------------------

def test_below_growth_the_page_says_export_needs_growth_and_links_to_billing(owner_page):
    html = owner_page.get(PAGE).content.decode()
    assert "needs the Growth plan or above" in html and 'href="/dashboard/billing?plan=growth"' in html
    assert EXPORT not in html


def test_below_growth_the_export_address_is_a_402_page(owner_page):
    response = owner_page.get(EXPORT, {"format": "csv"})
    assert response.status_code == 402 and "Not on your plan" in response.content.decode()


def test_growth_shows_export_links_that_carry_the_filters(growth_owner, page_client):
    html = page_client(growth_owner).get(PAGE, {"type": "sign", "from": "2026-03-01", "page": 2}).content.decode()
    assert f'href="{EXPORT}?type=sign&amp;from=2026-03-01&amp;format=csv"' in html
    assert f'href="{EXPORT}?type=sign&amp;from=2026-03-01&amp;format=json"' in html


def test_an_unverified_owner_sees_why_there_is_no_export(growth_org, page_client):
    owner = factories.make_user(org=growth_org, verified=False)
    html = page_client(owner).get(PAGE).content.decode()
    assert "owner's email address verified" in html and EXPORT not in html
    assert page_client(owner).get(EXPORT, {"format": "csv"}).status_code == 403


def test_the_dashboard_export_is_a_streamed_attachment_of_the_filtered_days(growth_org, growth_owner, page_client):
    _at(growth_org, "sign", "2026-03-01T00:00:00+00:00", "first-day")
    _at(growth_org, "sign", "2026-03-02T23:59:59+00:00", "second-day")
    _at(growth_org, "sign", "2026-03-03T00:00:00+00:00", "third-day")
    other = factories.make_org(plan="growth")
    audit_write(org=other, type="sign", metadata={"model": "theirs"})
    client = page_client(growth_owner)
    response = client.get(EXPORT, {"format": "csv", "from": "2026-03-01", "to": "2026-03-02"})
    assert response.status_code == 200 and response.streaming
    assert response["Content-Disposition"].startswith("attachment; filename=") and response["Content-Type"].startswith(
        "text/csv")
    rows = list(csv.reader(io.StringIO(b"".join(response.streaming_content).decode(), newline="")))
    assert [json.loads(row[3])["model"] for row in rows[1:]] == ["second-day", "first-day"]
    events = json.loads(b"".join(client.get(EXPORT, {"format": "json"}).streaming_content))
    assert [e["metadata"]["model"] for e in events] == ["third-day", "second-day", "first-day"]


def test_the_bare_export_address_leads_to_the_audit_page_with_its_filters(growth_owner, page_client):
    response = page_client(growth_owner).get(EXPORT, {"type": "sign"}, follow=True)
    assert response.redirect_chain == [("/dashboard/audit?type=sign", 302)]
    assert "Export from this page" in response.content.decode()


@pytest.mark.parametrize("query", [{"format": "xml"}, {"format": "csv", "from": "nope"}])
def test_a_bad_export_address_is_a_400_page(growth_owner, page_client, query):
    response = page_client(growth_owner).get(EXPORT, query)
    assert response.status_code == 400 and not response.streaming
    assert "That did not work" in response.content.decode()


def test_the_pages_need_a_signed_in_member(client):
    for path in (PAGE, f"{EXPORT}?format=csv"):
        response = client.get(path)
        assert response.status_code == 302 and response["Location"].startswith("/login")
