"""The 10-endpoint cap holds under concurrent creates (organization row lock): PostgreSQL only."""

import threading

import pytest
from django.db import connection, connections
from rest_framework.test import APIClient

from tests import factories
from webhooks.models import WebhookEndpoint

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor != "postgresql", reason="needs PostgreSQL row locks"),
]


def test_concurrent_creates_cannot_pass_ten_endpoints(org):
    factories.make_user(org=org)
    for _ in range(9):
        factories.make_webhook(org=org)
    keys = [factories.make_api_key(org=org) for _ in range(5)]
    barrier = threading.Barrier(len(keys))
    statuses: list[int] = []

    def create(key: str) -> None:
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
        barrier.wait()
        try:
            body = {"url": "https://93.184.216.34/hook", "events": ["record.created"]}
            statuses.append(client.post("/v1/webhooks", body, format="json").status_code)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=create, args=(key,)) for key in keys]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert sorted(statuses) == [201, 400, 400, 400, 400]
    assert WebhookEndpoint.objects.for_org(org).count() == 10
