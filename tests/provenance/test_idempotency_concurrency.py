"""Concurrent duplicates of one idempotent request: the first runs, the others wait for it and replay it.
Real threads, real transactions and PostgreSQL's locks."""

import io

import pytest
from django.db import connection

from audit.models import AuditEvent
from billing.models import UsageCounter
from config.models import IdempotentRequest
from provenance.models import Record
from tests import factories
from tests.concurrent_requests import responses_concurrently
from tests.media import photo_bytes

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
