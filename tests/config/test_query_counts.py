"""The hot paths stay at a known number of SQL statements (the ORM is most of a request's cost).

Only the statements of the code itself are counted: without Redis the rate limiter and the JWT
blocklist each add one statement on their own tables (in production they are Redis round trips; the
limiter's single statement is checked in test_ratelimit_concurrency). Inside a test transaction,
`atomic` adds SAVEPOINT and RELEASE, counted too.
"""

import io

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests import factories
from tests.media import photo_bytes

pytestmark = pytest.mark.django_db

SHARED_STATE_TABLES = ("core_ratecounter", "accounts_blockedsessiontoken")


def _statements(call) -> list[str]:
    with CaptureQueriesContext(connection) as captured:
        response = call()
    assert response.status_code < 300, response.content[:300]
    return [q["sql"] for q in captured.captured_queries
            if not any(table in q["sql"] for table in SHARED_STATE_TABLES)]


def test_an_api_key_request_is_one_query(key_client, org):
    client = key_client(org)
    client.get("/v1/billing/usage")  # the first use records last_used_at (once a minute)
    # The key with its organization, then the route's own read of the month's usage.
    assert len(_statements(lambda: client.get("/v1/billing/usage"))) == 2


def test_a_session_request_is_one_query(owner_client):
    assert len(_statements(lambda: owner_client.get("/v1/auth/me"))) == 1
    # The same key route as above: a session costs what a key costs.
    assert len(_statements(lambda: owner_client.get("/v1/billing/usage"))) == 2


def test_a_record_is_five_statements_plus_its_savepoint(key_client, org):
    generator, seed = factories.make_client_generator(org=org)
    client = key_client(org)
    client.post("/v1/records", factories.record_body(generator=generator, seed=seed, content=b"0"), format="json")
    body = factories.record_body(generator=generator, seed=seed, content=b"1")
    statements = _statements(lambda: client.post("/v1/records", body, format="json"))
    # key, generator key, INSERT record, INSERT audit, UPDATE counter; SAVEPOINT/RELEASE from atomic.
    assert len(statements) == 7, statements


def test_a_batch_of_50_costs_no_more_statements_than_one_record(key_client, growth_org):
    factories.make_user(org=growth_org)
    generator, seed = factories.make_client_generator(org=growth_org)
    client = key_client(growth_org)
    client.post("/v1/records", factories.record_body(generator=generator, seed=seed), format="json")
    items = [factories.record_body(generator=generator, seed=seed, content=str(i).encode()) for i in range(50)]
    statements = _statements(lambda: client.post("/v1/records/batch", {"records": items}, format="json"))
    # The plan gate's owner check adds one; records and audit events go in one INSERT each.
    assert len(statements) == 8, statements


def test_verify_is_a_few_statements(api_client, key_client, org):
    generator = factories.make_generator(org=org, formats=["image"])
    signed = key_client(org).post("/v1/sign", {"content": io.BytesIO(photo_bytes()), "model": "m",
                                               "generator_id": str(generator.pk)}, format="multipart").content

    def verify():
        return api_client.post("/v1/verify", {"content": io.BytesIO(signed)}, format="multipart")

    # The record with its key, generator and org; INSERT audit, a statement of its own (one organization).
    # The first verification of the unchanged file also keeps what its mark read gave (one UPDATE).
    first = _statements(verify)
    assert len(first) == 3 and first[1].startswith("UPDATE"), first
    assert len(_statements(verify)) == 2


def test_sign_is_the_record_path_plus_the_quota_precheck(key_client, org):
    generator = factories.make_generator(org=org, formats=["image"])
    client = key_client(org)
    content = photo_bytes()

    def sign():
        return client.post("/v1/sign", {"content": io.BytesIO(content), "model": "m",
                                        "generator_id": str(generator.pk)}, format="multipart")

    sign()
    # key, generator key, quota pre-check, INSERT record, INSERT audit, UPDATE counter, SAVEPOINT/RELEASE.
    assert len(_statements(sign)) == 8


def test_verify_by_the_exact_hash_is_one_lookup(api_client, key_client, org):
    generator, seed = factories.make_client_generator(org=org)
    content = photo_bytes("coffee", "png")  # no token container: its content hash is the raw bytes' hash
    key_client(org).post("/v1/records", factories.record_body(generator=generator, seed=seed, content=content),
                         format="json")

    def verify():
        return api_client.post("/v1/verify", {"content": io.BytesIO(content)}, format="multipart")

    # The earliest record of the file's hash with its key, generator and org; INSERT audit. No pHash search.
    statements = _statements(verify)
    assert len(statements) == 2 and "ORDER BY" in statements[0], statements
