import pytest

from audit.services import audit_write
from tests import factories

pytestmark = pytest.mark.django_db
URL = "/v1/audit"


def _fill(org, n: int):
    return [audit_write(org=org, type="sign", metadata={"n": i}) for i in range(n)]


def test_events_come_newest_first_with_the_spec_shape(key_client, org):
    _fill(org, 3)
    response = key_client(org).get(URL)
    assert response.status_code == 200
    body = response.json()
    assert (body["total"], body["page"], body["limit"]) == (3, 1, 20)
    assert [e["metadata"]["n"] for e in body["events"]] == [2, 1, 0]
    assert set(body["events"][0]) == {"event_id", "type", "timestamp", "metadata"}
    assert body["events"][0]["timestamp"].endswith("Z")


def test_pages_split_the_log(key_client, org):
    _fill(org, 5)
    client = key_client(org)
    page2 = client.get(URL, {"page": 2, "limit": 2}).json()
    assert [e["metadata"]["n"] for e in page2["events"]] == [2, 1]
    assert (page2["total"], page2["page"], page2["limit"]) == (5, 2, 2)
    assert client.get(URL, {"page": 9, "limit": 2}).json()["events"] == []


def test_a_limit_above_100_is_clamped(key_client, org):
    assert key_client(org).get(URL, {"limit": 500}).json()["limit"] == 100


@pytest.mark.parametrize("query", [{"page": 0}, {"page": -1}, {"page": "x"}, {"limit": 0}, {"limit": "1.5"},
                                   {"page": "99999999999999999999"}])
def test_bad_paging_is_400(key_client, org, query):
    response = key_client(org).get(URL, query)
    assert response.status_code == 400 and response.json()["error"] == "validation_error"


def test_the_log_is_scoped_to_the_organization(key_client, org, other_org):
    _fill(other_org, 2)
    assert key_client(org).get(URL).json() == {"events": [], "total": 0, "page": 1, "limit": 20}


def test_the_audit_log_needs_a_credential(api_client):
    assert api_client.get(URL).status_code == 401


def test_signing_registering_and_revoking_write_their_events(key_client, org):
    client = key_client(org)
    generator, seed = factories.make_client_generator(org=org)
    client.post("/v1/records", factories.record_body(generator=generator, seed=seed), format="json")
    client.put(f"/v1/generators/{generator.pk}/revoke")
    types = [e["type"] for e in client.get(URL).json()["events"]]
    assert types == ["key_revoked", "sign", "key_created"]
