"""Exact counting under concurrency, with real transactions and row locks: PostgreSQL only."""

import pytest
from django.db import connection

from billing.models import UsageCounter
from provenance.models import Record
from tests import factories
from tests.concurrent_requests import fire_concurrently

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor != "postgresql", reason="needs PostgreSQL row locks"),
]


def test_twenty_concurrent_signatures_at_495_let_exactly_five_through():
    org = factories.make_org(plan="free")
    generator, seed = factories.make_client_generator(org=org)
    factories.set_usage(org, 495)
    key = factories.make_api_key(org=org)
    bodies = [factories.record_body(generator=generator, seed=seed, content=f"c{i}".encode()) for i in range(20)]
    statuses = fire_concurrently([("post", "/v1/records", body, key) for body in bodies])
    assert sorted(statuses) == [201] * 5 + [402] * 15
    assert UsageCounter.objects.get(org=org).signatures_used == 500
    assert Record.objects.filter(org=org).count() == 5


def test_concurrent_first_signatures_of_the_month_count_each_once():
    org = factories.make_org(plan="starter")
    generator, seed = factories.make_client_generator(org=org)
    key = factories.make_api_key(org=org)
    bodies = [factories.record_body(generator=generator, seed=seed, content=f"c{i}".encode()) for i in range(12)]
    statuses = fire_concurrently([("post", "/v1/records", body, key) for body in bodies])
    assert statuses == [201] * 12
    assert UsageCounter.objects.get(org=org).signatures_used == 12
