"""Webhooks (plan-gated like the API, secret shown once, deliveries and retry), the audit log, billing,
and the overview."""

import json
import uuid

import pytest

from audit.services import audit_write
from tests import factories
from tests.webhooks.receiver import Receiver
from webhooks.models import WebhookDelivery, WebhookEndpoint
from webhooks.services import webhook_secret

pytestmark = pytest.mark.django_db


@pytest.fixture
def growth_owner(growth_org):
    return factories.make_user(org=growth_org, role="owner")


def _delivery(endpoint, event="record.created", code=500) -> WebhookDelivery:
    payload = json.dumps({"id": str(uuid.uuid4()), "event": event, "data": {"n": 1}})
    return WebhookDelivery.objects.create(org=endpoint.org, endpoint=endpoint, event=event, payload=payload,
                                          status="failed", response_code=code, latency_ms=12)


def test_webhooks_need_growth_like_the_api(owner_page):
    page = owner_page.get("/dashboard/webhooks")
    assert page.status_code == 402 and "/dashboard/billing" in page.content.decode()
    assert owner_page.post("/dashboard/webhooks", {"url": "https://hooks.example.com/in",
                                                   "events": ["record.created"]}).status_code == 402


def test_webhooks_need_the_owner_verified_email_like_the_api(growth_org, page_client):
    owner = factories.make_user(org=growth_org, role="owner", verified=False)
    assert page_client(owner).get("/dashboard/webhooks").status_code == 403


def test_creating_an_endpoint_shows_the_secret_once(growth_owner, growth_org, page_client, monkeypatch):
    monkeypatch.setattr("socket.getaddrinfo", lambda *a, **k: [(2, 1, 6, "", ("93.184.216.34", 443))])
    client = page_client(growth_owner)
    response = client.post("/dashboard/webhooks", {"url": "https://hooks.example.com/in",
                                                   "events": ["record.created", "generator.revoked"]})
    endpoint = WebhookEndpoint.objects.for_org(growth_org).get()
    assert response.status_code == 302 and response["Location"] == f"/dashboard/webhooks/{endpoint.pk}/created"
    secret = webhook_secret(endpoint)
    assert secret not in response["Location"]
    assert secret in client.get(response["Location"]).content.decode()
    reloaded = client.get(response["Location"])
    assert reloaded.status_code == 200 and secret not in reloaded.content.decode()
    assert "already shown" in reloaded.content.decode()
    assert WebhookEndpoint.objects.for_org(growth_org).count() == 1
    assert secret not in client.get(f"/dashboard/webhooks/{endpoint.pk}").content.decode()
    assert secret not in client.get("/dashboard/webhooks").content.decode()


def test_a_private_target_is_refused_on_the_form(growth_owner, growth_org, page_client):
    response = page_client(growth_owner).post("/dashboard/webhooks", {"url": "https://127.0.0.1/in",
                                                                      "events": ["record.created"]})
    assert response.status_code == 400 and not WebhookEndpoint.objects.exists()


def test_deliveries_show_payload_and_response_code_and_the_status_can_change(growth_owner, growth_org, page_client):
    endpoint, _ = factories.make_webhook(org=growth_org)
    delivery = _delivery(endpoint, code=503)
    client = page_client(growth_owner)
    html = client.get(f"/dashboard/webhooks/{endpoint.pk}").content.decode()
    assert "503" in html and "record.created" in html and "&quot;n&quot;: 1" in html
    assert f"/deliveries/{delivery.pk}/retry" in html
    client.post(f"/dashboard/webhooks/{endpoint.pk}/status", {"status": "disabled"})
    endpoint.refresh_from_db()
    assert endpoint.status == "disabled"
    client.post(f"/dashboard/webhooks/{endpoint.pk}/status", {"status": "active"})
    endpoint.refresh_from_db()
    assert endpoint.status == "active"


@pytest.mark.django_db(transaction=True)
def test_retry_sends_the_logged_payload_again(settings):
    settings.WEBHOOK_ALLOW_PRIVATE_TARGETS = True
    org = factories.make_org(plan="growth")
    owner = factories.make_user(org=org, role="owner")
    receiver = Receiver()
    try:
        endpoint, secret = factories.make_webhook(org=org, url=receiver.url("/hook"))
        receiver.expect_secret("/hook", secret)
        delivery = _delivery(endpoint)
        from django.test import Client

        client = Client()
        client.force_login(owner)
        response = client.post(f"/dashboard/webhooks/{endpoint.pk}/deliveries/{delivery.pk}/retry")
        assert response.status_code == 302
        [received] = receiver.received()
        assert received.body == delivery.payload.encode() and received.signature_ok
        assert WebhookDelivery.objects.filter(retry_of=delivery, status="success").exists()
    finally:
        receiver.close()


def test_deleting_an_endpoint_asks_first(growth_owner, growth_org, page_client):
    endpoint, _ = factories.make_webhook(org=growth_org)
    client = page_client(growth_owner)
    assert client.get(f"/dashboard/webhooks/{endpoint.pk}/delete").status_code == 200
    assert client.post(f"/dashboard/webhooks/{endpoint.pk}/delete")["Location"] == "/dashboard/webhooks"
    assert not WebhookEndpoint.objects.exists()


def test_another_organizations_endpoints_and_deliveries_are_not_found(growth_owner, page_client):
    theirs = factories.make_org(plan="growth", name="Theirs")
    factories.make_user(org=theirs, role="owner")
    endpoint, _ = factories.make_webhook(org=theirs)
    delivery = _delivery(endpoint)
    client = page_client(growth_owner)
    base = f"/dashboard/webhooks/{endpoint.pk}"
    assert client.get(base).status_code == 404
    assert client.post(f"{base}/status", {"status": "disabled"}).status_code == 404
    assert client.post(f"{base}/edit", {"url": "https://a.example/", "events": ["quota.limit"]}).status_code == 404
    assert client.post(f"{base}/delete").status_code == 404
    assert client.post(f"{base}/deliveries/{delivery.pk}/retry").status_code == 404
    assert WebhookEndpoint.objects.get(pk=endpoint.pk).status == "active"
    assert endpoint.url not in client.get("/dashboard/webhooks").content.decode()


# --- audit, billing, overview ------------------------------------------------------------------------

def test_the_audit_log_is_paged_newest_first_and_scoped(owner_page, org, other_org):
    for n in range(60):
        audit_write(org=org, type="sign", metadata={"model": f"model-{n}"})
    audit_write(org=other_org, type="sign", metadata={"model": "secret_marker"})
    first = owner_page.get("/dashboard/audit").content.decode()
    assert "“model-59”" in first and "“model-10”" in first and "“model-9”" not in first and "?page=2" in first
    second = owner_page.get("/dashboard/audit?page=2").content.decode()
    assert "“model-9”" in second and "“model-0”" in second and "?page=3" not in second
    assert "secret_marker" not in first + second


def test_billing_shows_the_plans_the_current_one_and_the_upgrade_target(owner_page):
    page = owner_page.get("/dashboard/billing?plan=growth").content.decode()
    for label in ("Free", "Starter", "Growth", "Scale", "Enterprise"):
        assert label in page
    assert "Free (current)" in page and "Move to Growth" in page
    assert '<option value="growth" selected>' in page and "Request this plan" in page
    assert owner_page.get("/dashboard/billing?plan=nonsense").status_code == 200


def test_the_overview_shows_plan_usage_chart_and_recent_activity(owner_page, org):
    factories.make_client_generator(org=org)
    factories.set_usage(org, 125)
    html = owner_page.get("/dashboard").content.decode()
    assert "125" in html and "of 500" in html and "25% of the allowance" in html
    assert '<svg class="chart"' in html and "<rect class=\"bar\"" in html
    # Registering the generator is in the activity, in words, not as a type and key=value pairs.
    assert "Registered generator “client-gen” with its own keys (client-managed)." in html
    assert "key_created" not in html and "generator_id=" not in html


def test_editing_an_endpoint_changes_its_url_and_events(growth_owner, growth_org, page_client, monkeypatch):
    monkeypatch.setattr("socket.getaddrinfo", lambda *a, **k: [(2, 1, 6, "", ("93.184.216.34", 443))])
    endpoint, _ = factories.make_webhook(org=growth_org)
    client = page_client(growth_owner)
    bad = client.post(f"/dashboard/webhooks/{endpoint.pk}/edit", {"url": "http://hooks.example.com/x",
                                                                  "events": ["quota.limit"]})
    assert bad.status_code == 400
    done = client.post(f"/dashboard/webhooks/{endpoint.pk}/edit", {"url": "https://hooks.example.com/new",
                                                                   "events": ["quota.limit", "quota.warning"]})
    assert done.status_code == 302
    endpoint.refresh_from_db()
    assert (endpoint.url, endpoint.events) == ("https://hooks.example.com/new", ["quota.warning", "quota.limit"])
