"""/v1/webhooks: create, list, update and delete endpoints."""

import pytest
from django.db import connection
from django.utils.dateparse import parse_datetime

from tests import factories
from tests.teams.errors import assert_error
from webhooks.models import WebhookEndpoint
from webhooks.services import webhook_secret

pytestmark = pytest.mark.django_db
URL = "/v1/webhooks"
FIELDS = {"webhook_id", "url", "events", "status", "failure_count", "created_at"}


def _create(client, url="https://hooks.example.com/in", events=("record.created",)):
    return client.post(URL, {"url": url, "events": list(events)}, format="json")


def _patch(client, webhook_id, **body):
    return client.patch(f"{URL}/{webhook_id}", body, format="json")


# --- create ---------------------------------------------------------------------------------------

def test_creating_returns_the_endpoint_and_its_secret_once(owner_client, org):
    response = _create(owner_client, events=["verify.tamper_detected", "record.created", "record.created"])
    assert response.status_code == 201, response.content
    body = response.json()
    assert set(body) == FIELDS | {"secret"}
    assert body["url"] == "https://hooks.example.com/in"
    assert body["events"] == ["record.created", "verify.tamper_detected"]  # spec order, no duplicates
    assert (body["status"], body["failure_count"]) == ("active", 0)
    assert body["created_at"].endswith("Z") and parse_datetime(body["created_at"])
    assert body["secret"].startswith("whsec_") and len(body["secret"]) > 40
    endpoint = WebhookEndpoint.objects.for_org(org).get(pk=body["webhook_id"])
    assert webhook_secret(endpoint) == body["secret"]


def test_the_secret_is_encrypted_in_the_database(owner_client):
    body = _create(owner_client).json()
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT * FROM {WebhookEndpoint._meta.db_table}")
        rows = cursor.fetchall()
    raw = repr(rows).encode() + b"".join(bytes(v) for row in rows for v in row if isinstance(v, bytes | memoryview))
    assert body["secret"].encode() not in raw
    assert body["secret"].removeprefix("whsec_").encode() not in raw


def test_an_organization_api_key_may_create(key_client, org, owner):
    assert _create(key_client(org)).status_code == 201


def test_unknown_or_no_event_kinds_are_400(owner_client, owner):
    for events in (["record.deleted"], [], ["record.created", "nope"]):
        response = _create(owner_client, events=events)
        assert_error(response, 400, "validation_error")
        assert "events" in response.json()["details"]
    assert_error(owner_client.post(URL, {"url": "https://hooks.example.com/"}, format="json"), 400,
                 "validation_error")
    assert_error(owner_client.post(URL, ["not", "an", "object"], format="json"), 400, "validation_error")
    assert not WebhookEndpoint.objects.exists()


@pytest.mark.parametrize("url", ["http://hooks.example.com/", "https://127.0.0.1/", "https://localhost/",
                                 "https://[::1]/", "https://10.0.0.1/", "https://169.254.169.254/",
                                 "https://[::ffff:127.0.0.1]/"])
def test_non_public_or_plain_http_targets_are_400_naming_url(owner_client, url, resolve_to):
    if "localhost" in url:
        resolve_to("127.0.0.1")
    response = _create(owner_client, url=url)
    assert_error(response, 400, "validation_error")
    assert set(response.json()["details"]) == {"url"}
    assert not WebhookEndpoint.objects.exists()


def test_a_name_resolving_to_loopback_is_refused(owner_client, resolve_to):
    asked = resolve_to("127.0.0.1")
    response = _create(owner_client, url="https://innocent.example.com/hook")
    assert_error(response, 400, "validation_error")
    assert "url" in response.json()["details"] and asked == ["innocent.example.com"]


def test_the_setting_allows_private_and_http_targets(owner_client, settings, resolve_to):
    settings.WEBHOOK_ALLOW_PRIVATE_TARGETS = True
    resolve_to("127.0.0.1")
    assert _create(owner_client, url="http://localhost:8000/hook").status_code == 201


def test_an_eleventh_endpoint_is_refused(owner_client, org):
    for _ in range(10):
        factories.make_webhook(org=org)
    assert_error(_create(owner_client), 400, "validation_error")
    assert WebhookEndpoint.objects.for_org(org).count() == 10


def test_another_organizations_endpoints_do_not_count(owner_client, other_org):
    for _ in range(10):
        factories.make_webhook(org=other_org)
    assert _create(owner_client).status_code == 201


# --- plan, email, credential -----------------------------------------------------------------------

@pytest.mark.parametrize("plan", ["free", "starter"])
def test_below_growth_every_route_is_402(plan, session_client):
    org = factories.make_org(plan=plan)
    client = session_client(factories.make_user(org=org))
    endpoint, _ = factories.make_webhook(org=org)
    for response in (_create(client), client.get(URL), _patch(client, endpoint.pk, status="disabled"),
                     client.delete(f"{URL}/{endpoint.pk}")):
        assert_error(response, 402, "plan_required")


@pytest.mark.parametrize("plan", ["scale", "enterprise"])
def test_plans_above_growth_may_use_webhooks(plan, session_client):
    org = factories.make_org(plan=plan)
    assert _create(session_client(factories.make_user(org=org))).status_code == 201


def test_an_unverified_owner_is_403(org, session_client, key_client):
    owner = factories.make_user(org=org, verified=False)
    assert_error(_create(session_client(owner)), 403, "email_not_verified")
    assert_error(key_client(org).get(URL), 403, "email_not_verified")


def test_no_credential_is_401(api_client):
    assert_error(api_client.get(URL), 401, "authentication_required")
    assert_error(_create(api_client), 401, "authentication_required")


# --- list -----------------------------------------------------------------------------------------

def test_the_list_shows_the_organizations_endpoints_without_secrets(owner_client, org, other_org, key_client):
    first, secret = factories.make_webhook(org=org, events=["quota.warning", "quota.limit"])
    second, _ = factories.make_webhook(org=org)
    factories.make_webhook(org=other_org)
    for client in (owner_client, key_client(org)):
        response = client.get(URL)
        assert response.status_code == 200
        webhooks = response.json()["webhooks"]
        assert [w["webhook_id"] for w in webhooks] == [str(first.pk), str(second.pk)]
        assert all(set(w) == FIELDS for w in webhooks)
        assert webhooks[0]["events"] == ["quota.warning", "quota.limit"]
        assert secret not in response.content.decode()


# --- update ---------------------------------------------------------------------------------------

def test_patch_changes_url_and_events_and_answers_the_endpoint(owner_client, org):
    endpoint, secret = factories.make_webhook(org=org)
    response = _patch(owner_client, endpoint.pk, url="https://new.example.com/hook",
                      events=["generator.revoked"])
    assert response.status_code == 200
    body = response.json()
    assert set(body) == FIELDS and "secret" not in body
    assert (body["url"], body["events"]) == ("https://new.example.com/hook", ["generator.revoked"])
    endpoint.refresh_from_db()
    assert endpoint.url == "https://new.example.com/hook" and webhook_secret(endpoint) == secret


def test_patch_refuses_a_private_url_unknown_events_a_failing_status_and_an_empty_body(owner_client, org):
    endpoint, _ = factories.make_webhook(org=org)
    for body, field in (({"url": "https://192.168.0.1/"}, "url"), ({"events": ["x.y"]}, "events"),
                        ({"events": []}, "events"), ({"status": "failing"}, "status"), ({}, None)):
        response = _patch(owner_client, endpoint.pk, **body)
        assert_error(response, 400, "validation_error")
        if field:
            assert field in response.json()["details"], body
    endpoint.refresh_from_db()
    assert (endpoint.url, endpoint.events, endpoint.status) == ("https://93.184.216.34/hook", ["record.created"],
                                                                "active")


def test_disabling_then_reactivating_resets_the_failure_count(owner_client, org):
    endpoint, _ = factories.make_webhook(org=org)
    WebhookEndpoint.objects.filter(pk=endpoint.pk).update(consecutive_failures=3)
    disabled = _patch(owner_client, endpoint.pk, status="disabled").json()
    assert (disabled["status"], disabled["failure_count"]) == ("disabled", 3)
    active = _patch(owner_client, endpoint.pk, status="active").json()
    assert (active["status"], active["failure_count"]) == ("active", 0)


def test_reactivating_a_failing_endpoint_resets_the_failure_count(owner_client, org):
    endpoint, _ = factories.make_webhook(org=org)
    WebhookEndpoint.objects.filter(pk=endpoint.pk).update(status="failing", consecutive_failures=5)
    body = _patch(owner_client, endpoint.pk, status="active").json()
    assert (body["status"], body["failure_count"]) == ("active", 0)


def test_active_to_active_keeps_the_count(owner_client, org):
    endpoint, _ = factories.make_webhook(org=org)
    WebhookEndpoint.objects.filter(pk=endpoint.pk).update(consecutive_failures=2)
    assert _patch(owner_client, endpoint.pk, status="active").json()["failure_count"] == 2


# --- delete ---------------------------------------------------------------------------------------

def test_delete_removes_the_endpoint(owner_client, key_client, org):
    endpoint, _ = factories.make_webhook(org=org)
    other, _ = factories.make_webhook(org=org)
    response = owner_client.delete(f"{URL}/{endpoint.pk}")
    assert (response.status_code, response.json()) == (200, {"deleted": True})
    assert list(WebhookEndpoint.objects.all()) == [other]
    assert key_client(org).delete(f"{URL}/{other.pk}").status_code == 200
    assert_error(owner_client.delete(f"{URL}/{endpoint.pk}"), 404, "not_found")


# --- ownership ------------------------------------------------------------------------------------

def test_another_organizations_endpoint_is_404(owner_client, other_org):
    endpoint, _ = factories.make_webhook(org=other_org)
    assert_error(_patch(owner_client, endpoint.pk, status="disabled"), 404, "not_found")
    assert_error(owner_client.delete(f"{URL}/{endpoint.pk}"), 404, "not_found")
    assert_error(_patch(owner_client, "not-a-uuid", status="disabled"), 404, "not_found")
    endpoint.refresh_from_db()
    assert endpoint.status == "active"


# --- audit ----------------------------------------------------------------------------------------

def test_create_update_and_delete_are_audited_without_the_secret(owner_client, org):
    from audit.models import AuditEvent

    body = _create(owner_client).json()
    webhook_id = body["webhook_id"]
    _patch(owner_client, webhook_id, status="disabled")
    owner_client.delete(f"{URL}/{webhook_id}")
    events = {e.type: e.metadata for e in AuditEvent.objects.for_org(org)}
    assert events == {
        "webhook.created": {"webhook_id": webhook_id, "url": "https://hooks.example.com/in",
                            "events": ["record.created"]},
        "webhook.updated": {"webhook_id": webhook_id, "status": "disabled"},
        "webhook.deleted": {"webhook_id": webhook_id, "url": "https://hooks.example.com/in"},
    }
    assert body["secret"] not in str(events)
