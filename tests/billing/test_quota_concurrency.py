"""Exact counting under concurrency, with real transactions and row locks: PostgreSQL only."""

import threading

import pytest
from django.db import connection, connections
from rest_framework.test import APIClient

from billing.models import UsageCounter
from provenance.models import Record
from tests import factories

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor != "postgresql", reason="needs PostgreSQL row locks"),
]


def _fire_concurrently(requests: list[dict], key: str, url: str) -> list[int]:
    barrier = threading.Barrier(len(requests))
    statuses: list[int] = [0] * len(requests)

    def send(index: int) -> None:
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
        barrier.wait()
        try:
            statuses[index] = client.post(url, requests[index], format="json").status_code
        finally:
            connections.close_all()

    threads = [threading.Thread(target=send, args=(i,)) for i in range(len(requests))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return statuses


def test_twenty_concurrent_signatures_at_495_let_exactly_five_through():
    org = factories.make_org(plan="free")
    generator, seed = factories.make_client_generator(org=org)
    factories.set_usage(org, 495)
    key = factories.make_api_key(org=org)
    bodies = [factories.record_body(generator=generator, seed=seed, content=f"c{i}".encode()) for i in range(20)]
    statuses = _fire_concurrently(bodies, key, "/v1/records")
    assert sorted(statuses) == [201] * 5 + [402] * 15
    assert UsageCounter.objects.get(org=org).signatures_used == 500
    assert Record.objects.filter(org=org).count() == 5


def test_concurrent_first_signatures_of_the_month_count_each_once():
    org = factories.make_org(plan="starter")
    generator, seed = factories.make_client_generator(org=org)
    key = factories.make_api_key(org=org)
    bodies = [factories.record_body(generator=generator, seed=seed, content=f"c{i}".encode()) for i in range(12)]
    statuses = _fire_concurrently(bodies, key, "/v1/records")
    assert statuses == [201] * 12
    assert UsageCounter.objects.get(org=org).signatures_used == 12
