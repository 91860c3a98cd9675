"""GET /v1/generators and the API key lists: without page or limit the whole list as before (plus counts);
with either, pages by the audit list's rules."""

import pytest

from tests import factories

pytestmark = pytest.mark.django_db


@pytest.fixture
def generators(org):
    return [factories.make_client_generator(org=org, name=f"gen {index}")[0] for index in range(5)]


def test_generators_without_paging_are_the_whole_list_oldest_first_with_counts(key_client, org, generators):
    body = key_client(org).get("/v1/generators").json()
    assert [item["generator_id"] for item in body["generators"]] == [str(g.pk) for g in generators]
    assert (body["total"], body["page"], body["limit"]) == (5, 1, None)


def test_generators_page_by_the_audit_lists_rules(key_client, org, other_org, generators):
    factories.make_client_generator(org=other_org)
    client = key_client(org)
    second = client.get("/v1/generators", {"page": 2, "limit": 2}).json()
    assert [item["generator_id"] for item in second["generators"]] == [str(g.pk) for g in generators[2:4]]
    assert (second["total"], second["page"], second["limit"]) == (5, 2, 2)
    first = client.get("/v1/generators", {"limit": 500}).json()
    assert (len(first["generators"]), first["limit"]) == (5, 100)
    assert client.get("/v1/generators", {"page": 1}).json()["limit"] == 20
    for bad in ({"limit": 0}, {"page": 0}, {"page": "x"}, {"limit": "2.5"}):
        response = client.get("/v1/generators", bad)
        assert response.status_code == 400 and response.json()["error"] == "validation_error", bad


def test_organization_keys_page_newest_first(session_client, owner, org):
    for index in range(4):
        factories.make_api_key(org=org, name=f"key {index}")
    client = session_client(owner)
    whole = client.get("/v1/api-keys").json()
    assert [key["name"] for key in whole["keys"]] == ["key 3", "key 2", "key 1", "key 0"]
    assert (whole["total"], whole["page"], whole["limit"]) == (4, 1, None)
    page = client.get("/v1/api-keys", {"page": 2, "limit": 3}).json()
    assert ([key["name"] for key in page["keys"]], page["total"]) == (["key 0"], 4)
    assert client.get("/v1/api-keys", {"limit": -1}).status_code == 400


def test_personal_keys_page_the_same_way(session_client, member):
    for _ in range(3):
        factories.make_personal_key(user=member)
    client = session_client(member)
    whole = client.get("/v1/team/members/me/api-keys").json()
    assert (len(whole["keys"]), whole["total"], whole["limit"]) == (3, 3, None)
    page = client.get("/v1/team/members/me/api-keys", {"limit": 2}).json()
    assert (len(page["keys"]), page["total"], page["page"], page["limit"]) == (2, 3, 1, 2)
    assert [key["key_id"] for key in page["keys"]] == [key["key_id"] for key in whole["keys"][:2]]


def _queries(client, path: str, params: dict) -> int:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as captured:
        assert client.get(path, params).status_code == 200
    return len([q for q in captured.captured_queries if "core_ratecounter" not in q["sql"]])


def test_a_generator_page_costs_the_same_queries_whatever_its_size(key_client, org, generators):
    client = key_client(org)
    client.get("/v1/generators")  # the key's last_used_at is written on first use
    # The key, the count, the page and its keys (one prefetch), for 1 item as for 5 and for the whole list.
    assert _queries(client, "/v1/generators", {"limit": 1}) == _queries(client, "/v1/generators", {"limit": 5}) == 4
    assert _queries(client, "/v1/generators", {}) == 3  # no count: the whole list is its own total
