"""Every staff screen of the issue opens, and its search and a filter find the right row and only it."""

from dataclasses import dataclass

import pytest
from django.db import models

from accounts.models import Organization, User
from audit.models import AuditEvent
from audit.services import audit_write
from generators.models import Generator
from provenance.models import Record
from tests import factories
from webhooks.models import WebhookEndpoint
from webhooks.services import webhook_update

pytestmark = pytest.mark.django_db


@dataclass
class Side:
    org: Organization
    owner: User
    generator: Generator
    record: Record
    webhook: WebhookEndpoint
    event: AuditEvent


def _side(name: str, plan: str, *, record_format: str, server_generator: bool) -> Side:
    org = factories.make_org(name=f"{name} Labs", plan=plan)
    owner = factories.make_user(org=org, email=f"owner@{name.lower()}.example", verified=server_generator)
    if server_generator:
        generator = factories.make_generator(org=org, name=f"{name}-gen")
    else:
        generator, _ = factories.make_client_generator(org=org, name=f"{name}-gen")
    record = Record.objects.create(org=org, generator=generator, key=generator.keys.get(), model="m",
                                   watermark_id=f"wm-{name.lower()}", content_hash="sha3-256:" + "0" * 64,
                                   signature=b"\x01", format=record_format)
    webhook, _ = factories.make_webhook(org=org, url=f"https://93.184.216.34/{name.lower()}")
    event = audit_write(org=org, type="sign", metadata={"record_id": str(record.pk), "note": f"m-{name.lower()}-7f3"})
    return Side(org, owner, generator, record, webhook, event)


@pytest.fixture
def acme() -> Side:
    return _side("Acme", "growth", record_format="png", server_generator=True)


@pytest.fixture
def other() -> Side:
    side = _side("Other", "free", record_format="jpeg", server_generator=False)
    webhook_update(endpoint=side.webhook, status="disabled")
    return side


def _change_url(row: models.Model) -> str:
    return f"/admin/{row._meta.app_label}/{row._meta.model_name}/{row.pk}/change/"


# (model, the Side attribute of its row, a search that finds only Acme's, a filter that keeps only Acme's)
SCREENS = [
    ("accounts/organization", "org", "owner@acme.example", "plan__exact=growth"),
    ("accounts/user", "owner", "acme.example", "email_verified__exact=1"),
    ("generators/generator", "generator", "Acme-gen", "mode__exact=server"),
    ("provenance/record", "record", "wm-acme", "format=png"),
    ("webhooks/webhookendpoint", "webhook", "/acme", "status__exact=active"),
    ("audit/auditevent", "event", "m-acme-7f3", "type__exact=key_created"),
]


@pytest.mark.parametrize(("screen", "attribute", "search", "query"), SCREENS, ids=[s[0] for s in SCREENS])
def test_each_screen_lists_searches_filters_and_opens_its_rows(staff_client, acme, other, screen, attribute,
                                                               search, query):
    mine, theirs = getattr(acme, attribute), getattr(other, attribute)
    changelist = f"/admin/{screen}/"
    page = staff_client.get(changelist)
    assert page.status_code == 200
    assert _change_url(mine) in page.content.decode() and _change_url(theirs) in page.content.decode()

    found = staff_client.get(changelist, {"q": search}).content.decode()
    assert _change_url(mine) in found and _change_url(theirs) not in found

    filtered = staff_client.get(f"{changelist}?{query}")
    assert filtered.status_code == 200
    html = filtered.content.decode()
    if screen == "audit/auditevent":  # Acme's key_created event, from registering its generator
        mine = AuditEvent.objects.get(org=acme.org, type="key_created")
        assert _change_url(acme.event) not in html
    assert _change_url(mine) in html and _change_url(theirs) not in html

    assert staff_client.get(_change_url(mine)).status_code == 200


def test_the_organization_screens_show_this_periods_usage(staff_client, acme):
    factories.set_usage(acme.org, 1234)
    listed = staff_client.get("/admin/accounts/organization/").content.decode()
    assert '<td class="field-signatures_this_period">1234</td>' in listed
    page = staff_client.get(_change_url(acme.org)).content.decode()
    assert "1,234 of 50,000 signatures" in page


def test_the_user_page_shows_whether_a_password_is_set_never_the_hash(staff_client, acme):
    page = staff_client.get(_change_url(acme.owner)).content.decode()
    algorithm, *_ = acme.owner.password.split("$")
    assert "password" in page.lower() and algorithm not in page and "hash" not in page.lower()


@pytest.mark.parametrize("screen", ["provenance/record", "audit/auditevent", "generators/generator",
                                    "webhooks/webhookendpoint"])
def test_the_organization_page_links_to_its_rows_and_only_its(staff_client, acme, other, screen):
    page = staff_client.get(_change_url(acme.org)).content.decode()
    link = f"/admin/{screen}/?org__id__exact={acme.org.pk}"
    assert f'href="{link}"' in page
    listed = staff_client.get(link).content.decode()
    model = {"provenance/record": "record", "audit/auditevent": "event", "generators/generator": "generator",
             "webhooks/webhookendpoint": "webhook"}[screen]
    assert _change_url(getattr(acme, model)) in listed and _change_url(getattr(other, model)) not in listed


def test_a_record_is_found_by_its_id_or_content_hash(staff_client, acme, other):
    for term in (str(acme.record.pk), f"{acme.record.pk}".upper()):
        found = staff_client.get("/admin/provenance/record/", {"q": term}).content.decode()
        assert _change_url(acme.record) in found and _change_url(other.record) not in found
