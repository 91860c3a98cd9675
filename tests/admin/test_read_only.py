"""Records and audit events are evidence: staff read them, nobody adds, edits or deletes them here.
Organizations, generators, webhook endpoints and usage counters are not deleted here either."""

import pytest

from audit.models import AuditEvent
from audit.services import audit_write
from billing.models import UsageCounter
from provenance.models import Record
from tests import factories
from webhooks.models import WebhookEndpoint

pytestmark = pytest.mark.django_db


@pytest.fixture
def rows(org) -> dict:
    generator = factories.make_generator(org=org)
    record = Record.objects.create(org=org, generator=generator, key=generator.keys.get(), model="m",
                                   watermark_id="wm", content_hash="sha3-256:" + "0" * 64, signature=b"\x01")
    audit_write(org=org, type="sign", metadata={"record_id": str(record.pk)})
    factories.set_usage(org, 3)
    webhook, _ = factories.make_webhook(org=org)
    return {"record": record, "auditevent": AuditEvent.objects.filter(type="sign").get(), "org": org,
            "generator": generator, "webhook": webhook, "usage": UsageCounter.objects.get()}


def _base(row) -> str:
    return f"/admin/{row._meta.app_label}/{row._meta.model_name}/"


@pytest.mark.parametrize("name", ["record", "auditevent"])
def test_evidence_cannot_be_added_changed_or_deleted(staff_client, rows, name):
    row = rows[name]
    base = _base(row)
    assert staff_client.get(f"{base}add/").status_code == 403
    assert staff_client.post(f"{base}{row.pk}/change/", {"model": "forged", "type": "verify"}).status_code == 403
    assert staff_client.get(f"{base}{row.pk}/delete/").status_code == 403
    assert staff_client.post(f"{base}{row.pk}/delete/", {"post": "yes"}).status_code == 403
    listed = staff_client.get(base).content.decode()
    assert f"{base}add/" not in listed and "delete_selected" not in listed
    page = staff_client.get(f"{base}{row.pk}/change/").content.decode()
    assert 'name="_save"' not in page and "deletelink" not in page
    assert type(row).objects.filter(pk=row.pk).exists()
    assert not Record.objects.filter(model="forged").exists() and not AuditEvent.objects.filter(type="verify").exists()


@pytest.mark.parametrize("name", ["org", "generator", "webhook", "usage"])
def test_rows_that_carry_evidence_or_cached_state_are_not_deleted_here(staff_client, rows, name):
    row = rows[name]
    assert staff_client.post(f"{_base(row)}{row.pk}/delete/", {"post": "yes"}).status_code == 403
    assert "delete_selected" not in staff_client.get(_base(row)).content.decode()
    assert type(row).objects.filter(pk=row.pk).exists()


def test_organizations_are_not_added_here(staff_client, rows):
    assert staff_client.get("/admin/accounts/organization/add/").status_code == 403


def test_a_webhook_endpoint_is_never_edited_here(staff_client, rows):
    webhook = rows["webhook"]
    staff_client.post(f"/admin/webhooks/webhookendpoint/{webhook.pk}/change/", {"url": "https://evil.example/"})
    assert WebhookEndpoint.objects.get(pk=webhook.pk).url == webhook.url
