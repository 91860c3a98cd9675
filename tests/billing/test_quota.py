import pytest

from billing.models import UsageCounter
from provenance.models import Record
from tests import factories

pytestmark = pytest.mark.django_db


def _sign(client, generator, seed, n: int = 0):
    return client.post("/v1/records", factories.record_body(generator=generator, seed=seed, content=str(n).encode()),
                       format="json")


def _setup(org, key_client, used: int):
    generator, seed = factories.make_client_generator(org=org)
    factories.set_usage(org, used)
    return key_client(org), generator, seed


@pytest.mark.parametrize(("used", "status"), [(498, 201), (499, 201), (500, 402), (501, 402)])
def test_the_free_plan_stops_at_500_a_month(key_client, org, used, status):
    client, generator, seed = _setup(org, key_client, used)
    response = _sign(client, generator, seed)
    assert response.status_code == status
    counter = UsageCounter.objects.get(org=org)
    if status == 201:
        assert counter.signatures_used == used + 1
    else:
        body = response.json()
        assert body == {"error": "signature_limit_reached", "message": body["message"],
                        "upgrade_url": "http://127.0.0.1:8000/dashboard/billing?plan=starter",
                        "limit": 500, "current": used}
        assert counter.signatures_used == used and not Record.objects.exists()


def test_the_first_signature_of_a_month_creates_the_counter(key_client, org):
    generator, seed = factories.make_client_generator(org=org)
    assert _sign(key_client(org), generator, seed).status_code == 201
    assert UsageCounter.objects.get(org=org).signatures_used == 1


def test_paid_plans_never_block_and_count_overage(key_client, api_client):
    org = factories.make_org(plan="starter")
    client, generator, seed = _setup(org, key_client, 4999)
    assert [_sign(client, generator, seed, n).status_code for n in range(3)] == [201, 201, 201]
    usage = client.get("/v1/billing/usage").json()
    assert usage["signatures_used"] == 5002 and usage["overage_count"] == 2 and usage["overage_rate"] == 0.008


def test_enterprise_is_unlimited(key_client):
    org = factories.make_org(plan="enterprise")
    client, generator, seed = _setup(org, key_client, 10_000_000)
    assert _sign(client, generator, seed).status_code == 201
    usage = client.get("/v1/billing/usage").json()
    assert usage["signatures_included"] is None and usage["overage_count"] == 0


def test_usage_reports_the_calendar_month(key_client, org):
    client, generator, seed = _setup(org, key_client, 0)
    _sign(client, generator, seed)
    usage = client.get("/v1/billing/usage").json()
    assert usage["plan"] == "free" and usage["billing_interval"] == "monthly"
    assert usage["signatures_used"] == 1 and usage["signatures_included"] == 500 and usage["overage_count"] == 0
    assert usage["period_start"].endswith("-01T00:00:00Z") and usage["period_end"].endswith("-01T00:00:00Z")


def test_usage_is_per_organization(key_client, org, other_org):
    _setup(org, key_client, 42)
    assert key_client(other_org).get("/v1/billing/usage").json()["signatures_used"] == 0
    assert key_client(org).get("/v1/billing/usage").json()["signatures_used"] == 42


def test_usage_needs_a_credential(api_client):
    assert api_client.get("/v1/billing/usage").status_code == 401


def test_crossing_80_percent_warns_once_and_reaching_the_limit_announces_it(key_client, org, emitted):
    client, generator, seed = _setup(org, key_client, 398)
    _sign(client, generator, seed, 1)  # 399
    _sign(client, generator, seed, 2)  # 400 = 80%
    _sign(client, generator, seed, 3)  # 401
    assert [kind for _, kind, _ in emitted if kind.startswith("quota")] == ["quota.warning"]
    factories.set_usage(org, 499)
    _sign(client, generator, seed, 4)  # 500
    assert [kind for _, kind, _ in emitted if kind.startswith("quota")] == ["quota.warning", "quota.limit"]
    limit_event = next(data for _, kind, data in emitted if kind == "quota.limit")
    period = UsageCounter.objects.get(org=org).period_start.isoformat()
    assert limit_event == {"plan": "free", "signatures_used": 500, "signatures_included": 500,
                           "period_start": period, "blocked": True}
    assert _sign(client, generator, seed, 5).status_code == 402  # blocked now: announced already
    assert [kind for _, kind, _ in emitted if kind.startswith("quota")] == ["quota.warning", "quota.limit"]


def test_the_first_refusal_announces_the_limit_once_when_no_signature_reached_it(key_client, org, emitted):
    client, generator, seed = _setup(org, key_client, 500)  # set there by hand: no signature crossed 100%
    assert [_sign(client, generator, seed, n).status_code for n in range(3)] == [402, 402, 402]
    limits = [data for _, kind, data in emitted if kind == "quota.limit"]
    assert len(limits) == 1 and limits[0]["blocked"] is True and limits[0]["signatures_used"] == 500
    assert UsageCounter.objects.get(org=org).limit_announced is True


def test_a_paid_plan_announces_where_overage_starts_without_blocking(key_client, emitted):
    org = factories.make_org(plan="starter")
    client, generator, seed = _setup(org, key_client, 4999)
    assert [_sign(client, generator, seed, n).status_code for n in range(2)] == [201, 201]
    limits = [data for _, kind, data in emitted if kind == "quota.limit"]
    assert len(limits) == 1 and limits[0]["blocked"] is False and limits[0]["signatures_used"] == 5000
