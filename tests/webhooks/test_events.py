"""`event_emit`, the one seam of webhook events, and the `emitted` fixture that listens there."""

import pytest
from django.db import connection, transaction

from tests import factories
from webhooks import events
from webhooks.events import event_emit
from webhooks.models import WebhookEndpoint
from webhooks.services import active_endpoints, webhook_delete, webhook_secret, webhook_update

pytestmark = pytest.mark.django_db


def test_the_emitted_fixture_captures_an_emitter_it_does_not_know_by_name(org, emitted):
    # This module is none of the app services the fixture once patched by name: its events count too.
    event_emit(org=org, kind="generator.revoked", data={"generator_id": "g"})
    events.event_emit(org=org, kind="quota.warning", data={})
    assert emitted == [(org.pk, "generator.revoked", {"generator_id": "g"}), (org.pk, "quota.warning", {})]


def test_an_unknown_kind_is_refused_and_not_announced(org, emitted):
    with pytest.raises(ValueError):
        event_emit(org=org, kind="record.deleted", data={})
    assert emitted == []


def test_a_listener_hears_nothing_once_it_stops(org):
    heard = []
    stop = events.event_listen(lambda org, kind, data: heard.append(kind))
    event_emit(org=org, kind="quota.warning", data={})
    stop()
    event_emit(org=org, kind="quota.limit", data={})
    assert heard == ["quota.warning"]


def test_an_event_no_active_endpoint_subscribes_to_costs_no_query(org, django_assert_num_queries):
    factories.make_webhook(org=org, events=["generator.revoked"])
    org.refresh_from_db()
    assert [entry["events"] for entry in org.active_webhooks] == [["generator.revoked"]]
    with transaction.atomic():
        with django_assert_num_queries(0):
            event_emit(org=org, kind="record.created", data={})  # subscribed by nobody: not even an on_commit
        assert connection.run_on_commit == []


def test_the_organization_row_follows_every_endpoint_change(org):
    def snapshot():
        org.refresh_from_db()
        return [(entry["url"], entry["events"], entry["failures"]) for entry in org.active_webhooks]

    first, _ = factories.make_webhook(org=org, url="https://93.184.216.34/a", events=["record.created"])
    second, _ = factories.make_webhook(org=org, url="https://93.184.216.34/b", events=["quota.warning"])
    assert snapshot() == [(first.url, ["record.created"], 0), (second.url, ["quota.warning"], 0)]
    webhook_update(endpoint=first, status="disabled")
    webhook_update(endpoint=second, events=["generator.revoked"], url="https://93.184.216.34/c")
    assert snapshot() == [("https://93.184.216.34/c", ["generator.revoked"], 0)]
    WebhookEndpoint.objects.filter(pk=first.pk).update(consecutive_failures=3)
    webhook_update(endpoint=first, status="active")  # reactivation resets the count
    assert snapshot() == [(first.url, ["record.created"], 0), ("https://93.184.216.34/c", ["generator.revoked"], 0)]
    assert [active.id for active in active_endpoints(org)] == [first.pk, second.pk]
    assert webhook_secret(active_endpoints(org)[0]) == webhook_secret(first)  # the sealed secret travels along
    for each in WebhookEndpoint.objects.all():
        webhook_delete(endpoint=each)
    assert snapshot() == []
