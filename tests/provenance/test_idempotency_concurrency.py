"""Concurrent duplicates of one idempotent request: the first runs, the others wait for it and replay it.
Real threads, real transactions and PostgreSQL's locks."""

import io
import os
import threading

import psycopg
import pytest
from django.db import connection
from django.utils import timezone
from rest_framework.test import APIClient

from audit.models import AuditEvent
from billing.models import UsageCounter
from core.models import IdempotentRequest
from provenance import services
from provenance.models import Record
from tests import factories
from tests.concurrent_requests import responses_concurrently
from tests.media import photo_bytes
from tests.waiting import wait_until

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor != "postgresql", reason="needs PostgreSQL row locks"),
]

SKIPPED_HEADERS = ("x-request-id", "x-ratelimit-", "idempotent-replayed")


def _seen(response) -> tuple:
    headers = {name.lower(): value for name, value in response.items() if not name.lower().startswith(SKIPPED_HEADERS)}
    return response.status_code, response.content, tuple(sorted(headers.items()))


def test_ten_concurrent_identical_records_make_one_record_and_ten_identical_answers(emitted):
    org = factories.make_org(plan="starter")
    generator, seed = factories.make_client_generator(org=org)
    key = factories.make_api_key(org=org)
    body = factories.record_body(generator=generator, seed=seed)

    def send(client):
        return client.post("/v1/records", body, format="json", HTTP_AUTHORIZATION=f"Bearer {key}",
                           HTTP_IDEMPOTENCY_KEY="race-1")

    responses = responses_concurrently(10, send)
    assert {_seen(response) for response in responses} == {_seen(responses[0])}
    assert responses[0].status_code == 201
    assert sorted(str(response.get("Idempotent-Replayed")) for response in responses) == ["None"] + ["true"] * 9
    assert Record.objects.filter(org=org).count() == 1
    assert UsageCounter.objects.get(org=org).signatures_used == 1
    assert AuditEvent.objects.filter(org=org, type="sign").count() == 1
    assert [kind for _, kind, _ in emitted] == ["record.created"]
    assert IdempotentRequest.objects.count() == 1


def test_ten_concurrent_identical_signatures_sign_once_and_return_the_same_file():
    org = factories.make_org(plan="starter")
    generator = factories.make_generator(org=org, formats=["image"])
    key = factories.make_api_key(org=org)
    content = photo_bytes()

    def send(client):
        form = {"content": io.BytesIO(content), "model": "m", "generator_id": str(generator.pk)}
        return client.post("/v1/sign", form, format="multipart", HTTP_AUTHORIZATION=f"Bearer {key}",
                           HTTP_IDEMPOTENCY_KEY="race-sign")

    responses = responses_concurrently(10, send)
    assert responses[0].status_code == 201
    assert {_seen(response) for response in responses} == {_seen(responses[0])}
    assert Record.objects.filter(org=org).count() == 1
    assert UsageCounter.objects.get(org=org).signatures_used == 1


def test_concurrent_requests_under_different_keys_each_run():
    org = factories.make_org(plan="starter")
    generator, seed = factories.make_client_generator(org=org)
    key = factories.make_api_key(org=org)
    bodies = [factories.record_body(generator=generator, seed=seed, content=f"c{i}".encode()) for i in range(6)]
    counter = iter(range(6))

    def send(client):
        index = next(counter)
        return client.post("/v1/records", bodies[index], format="json", HTTP_AUTHORIZATION=f"Bearer {key}",
                           HTTP_IDEMPOTENCY_KEY=f"key-{index}")

    responses = responses_concurrently(6, send)
    assert [response.status_code for response in responses] == [201] * 6
    assert Record.objects.filter(org=org).count() == 6


def test_a_holder_whose_connection_dies_frees_the_key_for_the_waiting_retry():
    """A process killed mid-request: its uncommitted claim goes with its connection, and the retry that was
    waiting on it runs the request once."""

    org = factories.make_org(plan="starter")
    generator, seed = factories.make_client_generator(org=org)
    key = factories.make_api_key(org=org)
    body = factories.record_body(generator=generator, seed=seed)
    settings = connection.settings_dict
    dying = psycopg.connect(host=settings["HOST"], port=settings["PORT"] or 5432, user=settings["USER"],
                            dbname=settings["NAME"])
    dying.execute("INSERT INTO core_idempotentrequest (org_id, key, fingerprint, created_at, status, headers, body) "
                  "VALUES (%s, %s, %s, %s, 0, '[]', '')", [org.pk, "crash-1", "0" * 64, timezone.now()])
    # The claim is made and not committed, as by a worker that is now signing.
    responses = []
    retry = threading.Thread(target=lambda: responses.extend(responses_concurrently(1, lambda client: client.post(
        "/v1/records", body, format="json", HTTP_AUTHORIZATION=f"Bearer {key}", HTTP_IDEMPOTENCY_KEY="crash-1"))))
    retry.start()
    # This process runs the retry's thread: what it spends bounds the wait (tests/waiting.py).
    wait_until(_someone_waits_on_a_lock, pids=lambda: [os.getpid()], cpu_budget=30,
               what="the retry waiting on the claim's lock")
    assert Record.objects.filter(org=org).count() == 0
    dying.close()  # the worker dies: PostgreSQL rolls its transaction back
    retry.join(timeout=60)
    assert responses[0].status_code == 201 and "Idempotent-Replayed" not in responses[0]
    assert Record.objects.filter(org=org).count() == 1
    assert IdempotentRequest.objects.get(key="crash-1").status == 201


def _someone_waits_on_a_lock() -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                       "AND wait_event_type = 'Lock'")
        return cursor.fetchone()[0] > 0


def test_a_request_that_fails_inside_the_service_leaves_the_key_free(monkeypatch):
    org = factories.make_org(plan="starter")
    generator, seed = factories.make_client_generator(org=org)
    key = factories.make_api_key(org=org)
    body = factories.record_body(generator=generator, seed=seed)
    client = APIClient(raise_request_exception=False)
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    original = services.record_create

    def fail_after_storing(*, org, draft):
        original(org=org, draft=draft)
        raise RuntimeError("the worker fails after the record's INSERT")

    monkeypatch.setattr(services, "record_create", fail_after_storing)
    failed = client.post("/v1/records", body, format="json", HTTP_IDEMPOTENCY_KEY="fails-1")
    assert failed.status_code == 500
    assert Record.objects.filter(org=org).count() == 0 and IdempotentRequest.objects.count() == 0
    monkeypatch.undo()
    retried = client.post("/v1/records", body, format="json", HTTP_IDEMPOTENCY_KEY="fails-1")
    assert retried.status_code == 201 and Record.objects.filter(org=org).count() == 1
