"""Changelists cost a fixed number of queries, whatever the rows show: 50 rows, each of its own organization,
so a foreign key read per row would add 50."""

from datetime import timedelta

import pytest
from django.utils import timezone
from django_otp.plugins.otp_totp.models import TOTPDevice

from accounts.models import ApiKey, Organization, User
from audit.models import AuditEvent
from billing.models import UsageCounter
from generators.models import Generator, GeneratorKey
from provenance.models import Record
from teams.models import Invite
from webhooks.models import WebhookDelivery, WebhookEndpoint

pytestmark = pytest.mark.django_db

ROWS = 50
# Session, user, the page's COUNT and the rows (5 on SQLite), with room for a filter's choices; not ROWS.
MAX_QUERIES = 8


@pytest.fixture
def fifty_of_everything() -> None:
    now = timezone.now()
    orgs = Organization.objects.bulk_create(Organization(name=f"Org {i}") for i in range(ROWS))
    users = User.objects.bulk_create(User(email=f"u{i}@example.com", org=org, password="!")
                                     for i, org in enumerate(orgs))
    ApiKey.objects.bulk_create(ApiKey(org=org, user=user, lookup_id=f"look{i}", digest="0" * 64, preview=f"svc_key_{i}")
                               for i, (org, user) in enumerate(zip(orgs, users, strict=True)))
    generators = Generator.objects.bulk_create(Generator(org=org, name="g", mode="client") for org in orgs)
    keys = GeneratorKey.objects.bulk_create(GeneratorKey(generator=g, kid="k", public_key=b"p") for g in generators)
    Record.objects.bulk_create(Record(org=g.org, generator=g, key=k, model="m", watermark_id="w",
                                      content_hash="sha3-256:" + "0" * 64, signature=b"s")
                               for g, k in zip(generators, keys, strict=True))
    AuditEvent.objects.bulk_create(AuditEvent(org=org, type="sign", metadata={}) for org in orgs)
    UsageCounter.objects.bulk_create(UsageCounter(org=org, period_start=now.date().replace(day=1)) for org in orgs)
    endpoints = WebhookEndpoint.objects.bulk_create(
        WebhookEndpoint(org=org, url=f"https://h/{i}", encrypted_secret=b"x") for i, org in enumerate(orgs))
    WebhookDelivery.objects.bulk_create(WebhookDelivery(org=e.org, endpoint=e, event="record.created", payload="{}",
                                                        status="success") for e in endpoints)
    Invite.objects.bulk_create(Invite(org=org, email=f"i{i}@example.com", role="user", inviter=user, digest=f"d{i}",
                                      expires_at=now + timedelta(days=7))
                               for i, (org, user) in enumerate(zip(orgs, users, strict=True)))
    TOTPDevice.objects.bulk_create(TOTPDevice(user=user, name="phone") for user in users)


CHANGELISTS = ["accounts/organization", "accounts/user", "accounts/apikey", "generators/generator",
               "provenance/record", "audit/auditevent", "webhooks/webhookendpoint", "webhooks/webhookdelivery",
               "teams/invite", "billing/usagecounter", "otp_totp/totpdevice"]


@pytest.mark.parametrize("changelist", CHANGELISTS)
def test_a_changelist_of_fifty_rows_costs_a_fixed_number_of_queries(staff_client, fifty_of_everything, changelist,
                                                                    django_assert_max_num_queries):
    with django_assert_max_num_queries(MAX_QUERIES):
        page = staff_client.get(f"/admin/{changelist}/")
    assert page.status_code == 200
    rows = page.content.decode().split("<tbody>")[1].split("</tbody>")[0].count("<tr")
    assert rows >= ROWS  # users and organizations have the staff member's too


@pytest.mark.parametrize("changelist", ["provenance/record", "audit/auditevent", "webhooks/webhookdelivery"])
def test_the_big_lists_never_scan_their_table_for_filter_choices_or_count_it_twice(
        staff_client, fifty_of_everything, changelist, django_assert_max_num_queries):
    with django_assert_max_num_queries(MAX_QUERIES) as captured:
        staff_client.get(f"/admin/{changelist}/?q=x")
    statements = [query["sql"] for query in captured.captured_queries]
    assert not [sql for sql in statements if "DISTINCT" in sql]
    assert sum("COUNT(" in sql for sql in statements) == 1  # the page's, not also the whole table's
