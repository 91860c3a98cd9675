"""The 10-endpoint cap holds under concurrent creates (organization row lock): PostgreSQL only."""

import pytest
from django.db import connection

from tests import factories
from tests.concurrent_requests import fire_concurrently
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
    body = {"url": "https://93.184.216.34/hook", "events": ["record.created"]}
    statuses = fire_concurrently([("post", "/v1/webhooks", body, key) for key in keys])
    assert sorted(statuses) == [201, 400, 400, 400, 400]
    assert WebhookEndpoint.objects.for_org(org).count() == 10
