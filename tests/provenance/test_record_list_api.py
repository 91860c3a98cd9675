"""GET /v1/records: the caller's organization's records, paged and filtered, each as GET /v1/records/:id."""

from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from provenance.models import Record
from tests import factories
from transparency import services as log_services

pytestmark = pytest.mark.django_db
URL = "/v1/records"


def _submit(client, generator, seed, count: int, *, model: str = "model-x", start: int = 0) -> list[str]:
    ids = []
    for index in range(start, start + count):
        body = factories.record_body(generator=generator, seed=seed, content=f"item {index}".encode(), model=model)
        response = client.post(URL, body, format="json")
        assert response.status_code == 201, response.content
        ids.append(response.json()["record_id"])
    return ids


def _at(record_id: str, moment: datetime) -> None:
    Record.objects.filter(pk=record_id).update(signed_at=moment)


@pytest.fixture
def client_gen(org):
    return factories.make_client_generator(org=org)


def test_records_are_listed_newest_first_each_exactly_as_the_record_route_shows_it(key_client, org, client_gen):
    client = key_client(org)
    ids = _submit(client, *client_gen, 3)
    base = datetime(2026, 3, 1, tzinfo=UTC)
    for offset, record_id in enumerate(ids):
        _at(record_id, base + timedelta(hours=offset))
    log_services.log_sequence()  # integrated records carry their inclusion proof in the list too
    response = client.get(URL)
    assert response.status_code == 200
    body = response.json()
    assert (body["total"], body["page"], body["limit"]) == (3, 1, 20)
    assert [item["record_id"] for item in body["records"]] == ids[::-1]
    for item in body["records"]:
        assert item == client.get(f"{URL}/{item['record_id']}").json()
    assert body["records"][0]["log"]["status"] == "integrated"


def test_a_session_lists_the_same_records_as_a_key(key_client, owner_client, org, client_gen):
    ids = _submit(key_client(org), *client_gen, 2)
    body = owner_client.get(URL).json()
    assert sorted(item["record_id"] for item in body["records"]) == sorted(ids)


def test_another_organizations_records_never_appear(key_client, org, other_org, client_gen):
    _submit(key_client(org), *client_gen, 2)
    other_generator, other_seed = factories.make_client_generator(org=other_org)
    theirs = _submit(key_client(other_org), other_generator, other_seed, 1)
    mine = key_client(org).get(URL).json()
    assert mine["total"] == 2 and theirs[0] not in {item["record_id"] for item in mine["records"]}
    # Filtering by the other organization's generator finds nothing rather than their records.
    by_their_generator = key_client(org).get(URL, {"generator_id": str(other_generator.pk)}).json()
    assert (by_their_generator["total"], by_their_generator["records"]) == (0, [])


def test_pages_follow_the_audit_lists_rules(key_client, org, client_gen):
    client = key_client(org)
    ids = _submit(client, *client_gen, 5)
    second = client.get(URL, {"page": 2, "limit": 2}).json()
    assert (second["total"], second["page"], second["limit"]) == (5, 2, 2)
    newest_first = [item["record_id"] for item in client.get(URL, {"limit": 5}).json()["records"]]
    assert sorted(newest_first) == sorted(ids)
    assert [item["record_id"] for item in second["records"]] == newest_first[2:4]
    assert client.get(URL, {"page": 9}).json()["records"] == []
    assert client.get(URL, {"limit": 1000}).json()["limit"] == 100
    for bad in ({"limit": 0}, {"page": 0}, {"limit": "ten"}, {"page": "1.5"}, {"limit": -3}):
        response = client.get(URL, bad)
        assert response.status_code == 400, bad
        assert response.json()["error"] == "validation_error"


def test_filters_by_generator_model_and_format_apply_together(key_client, org, client_gen):
    client = key_client(org)
    generator, seed = client_gen
    second_generator, second_seed = factories.make_client_generator(org=org, name="second")
    first_a = _submit(client, generator, seed, 2, model="model-a")
    first_b = _submit(client, generator, seed, 1, model="model-b", start=10)
    second_a = _submit(client, second_generator, second_seed, 1, model="model-a", start=20)

    def listed(**params) -> set[str]:
        response = client.get(URL, params)
        assert response.status_code == 200, response.content
        return {item["record_id"] for item in response.json()["records"]}

    assert listed(generator_id=str(generator.pk)) == set(first_a + first_b)
    assert listed(model="model-a") == set(first_a + second_a)
    assert listed(model="model-a", generator_id=str(second_generator.pk)) == set(second_a)
    assert listed(model="model-") == set()  # exact, not a prefix
    # Client-managed records have no format; server-signed ones carry theirs.
    Record.objects.filter(pk=first_b[0]).update(format="image")
    assert listed(format="image") == set(first_b)
    assert listed(format="audio") == set()


def test_the_date_range_takes_iso_dates_and_instants_from_inclusive_to_exclusive(key_client, org, client_gen):
    client = key_client(org)
    ids = _submit(client, *client_gen, 3)
    moments = [datetime(2026, 1, 31, 23, 0, tzinfo=UTC), datetime(2026, 2, 1, tzinfo=UTC),
               datetime(2026, 2, 15, 12, 30, tzinfo=UTC)]
    for record_id, moment in zip(ids, moments, strict=True):
        _at(record_id, moment)

    def listed(**params) -> list[str]:
        response = client.get(URL, params)
        assert response.status_code == 200, response.content
        return [item["record_id"] for item in response.json()["records"]]

    assert listed(**{"from": "2026-02-01", "to": "2026-03-01"}) == [ids[2], ids[1]]
    assert listed(to="2026-02-01T00:00:00Z") == [ids[0]]
    assert listed(**{"from": "2026-02-15T12:30:00Z"}) == [ids[2]]
    # An offset is converted: 13:30+01:00 is 12:30 UTC, so the record at 12:30 is not before it.
    assert listed(to="2026-02-15T13:30:00+01:00") == [ids[1], ids[0]]


@pytest.mark.parametrize("params", [
    {"from": "yesterday"}, {"to": "2026-13-01"}, {"from": "2026-02-30"}, {"generator_id": "not-a-uuid"},
    {"format": "spreadsheet"}, {"from": "2026-03-01", "to": "2026-02-01"}, {"model": "m" * 201},
    {"from": "0001-01-01T00:00:00+14:00"},
])
def test_bad_filter_values_are_400_validation_error(key_client, org, params):
    response = key_client(org).get(URL, params)
    assert response.status_code == 400
    assert response.json()["error"] == "validation_error"


def test_listing_needs_a_credential(api_client):
    response = api_client.get(URL)
    assert response.status_code == 401
    assert response.json()["error"] == "authentication_required"


def _queries_for(client, limit: int) -> int:
    with CaptureQueriesContext(connection) as captured:
        response = client.get(URL, {"limit": limit})
    assert response.status_code == 200
    assert len(response.json()["records"]) == limit
    return len([q for q in captured.captured_queries if "core_ratecounter" not in q["sql"]])


def test_a_page_costs_the_same_queries_whatever_its_size(key_client, org, client_gen):
    client = key_client(org)
    _submit(client, *client_gen, 30)
    log_services.log_sequence()
    _submit(client, *client_gen, 5, start=100)  # pending ones beside integrated ones
    client.get(URL)  # the key's last_used_at is written on first use
    # The key with its organization, the count, the page with organization and key, and the log's tiles
    # once for all the page's integrated records (none when the page has only pending ones).
    assert _queries_for(client, 2) == 3
    assert _queries_for(client, 30) == _queries_for(client, 35) == 4
