"""A database connection lost under a request: 503 `service_unavailable` with Retry-After, then recovery.

The server side really drops the connection (pg_terminate_backend, what a PostgreSQL restart does to
every session). The whole restart under load, through gunicorn, is `bench/faults.py postgres`.
"""

import psycopg
import pytest
from django.db import close_old_connections, connection

from provenance.models import Record
from tests import factories

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor != "postgresql", reason="needs a PostgreSQL server to drop the connection"),
]


def _drop_our_connection() -> None:
    settings = connection.settings_dict
    with psycopg.connect(host=settings["HOST"], port=settings["PORT"] or 5432, user=settings["USER"],
                         dbname=settings["NAME"], autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", [connection.connection.info.backend_pid])


def test_a_dropped_connection_answers_503_then_the_next_request_reconnects(api_client):
    org = factories.make_org(plan="scale")
    generator, seed = factories.make_client_generator(org=org)
    api_client.credentials(HTTP_AUTHORIZATION=f"Bearer {factories.make_api_key(org=org)}")
    body = factories.record_body(generator=generator, seed=seed, content=b"before")
    assert api_client.post("/v1/records", body, format="json").status_code == 201

    _drop_our_connection()
    lost = api_client.post("/v1/records", factories.record_body(generator=generator, seed=seed, content=b"lost"),
                           format="json")
    assert lost.status_code == 503
    assert lost.json()["error"] == "service_unavailable" and lost.json()["message"]
    assert int(lost["Retry-After"]) > 0

    # What Django runs when a request ends (the test client skips it): a connection that saw an
    # error and fails `is_usable` is closed, so the next request opens a new one.
    close_old_connections()
    assert connection.connection is None
    again = api_client.post("/v1/records", factories.record_body(generator=generator, seed=seed, content=b"again"),
                            format="json")
    assert again.status_code == 201
    assert Record.objects.filter(org=org).count() == 2  # the 503 stored nothing



@pytest.mark.urls("tests.config.urls_probe")
def test_a_dropped_connection_outside_a_drf_view_is_a_503_too():
    from django.test import Client

    client = Client(raise_request_exception=False)  # let Django's handler500 answer, as in production
    assert client.get("/v1/probe/plain-database").status_code == 200
    _drop_our_connection()
    response = client.get("/v1/probe/plain-database")
    assert response.status_code == 503
    assert response.json()["error"] == "service_unavailable"
    assert int(response["Retry-After"]) > 0
    close_old_connections()
    assert client.get("/v1/probe/plain-database").status_code == 200
