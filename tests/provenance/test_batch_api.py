import base64

import pytest

from audit.models import AuditEvent
from billing.models import UsageCounter
from provenance.models import Record
from tests import factories

pytestmark = pytest.mark.django_db
URL = "/v1/records/batch"


@pytest.fixture
def growth_gen(growth_org):
    factories.make_user(org=growth_org, role="owner", verified=True)
    return factories.make_client_generator(org=growth_org)


def _items(generator, seed, n: int) -> list[dict]:
    return [factories.record_body(generator=generator, seed=seed, content=f"item {i}".encode(),
                                  watermark_id=f"wm-{i}") for i in range(n)]


def test_a_batch_is_stored_in_input_order_and_counts_n(key_client, growth_org, growth_gen, emitted):
    items = _items(*growth_gen, 50)
    response = key_client(growth_org).post(URL, {"records": items}, format="json")
    assert response.status_code == 207
    results = response.json()["results"]
    assert len(results) == 50 and all(set(r) == {"token", "record_id"} for r in results)
    for item, result in zip(items, results, strict=True):
        assert Record.objects.get(pk=result["record_id"]).watermark_id == item["watermark_id"]
    assert UsageCounter.objects.get(org=growth_org).signatures_used == 50
    assert AuditEvent.objects.filter(org=growth_org, type="sign").count() == 50
    assert sum(kind == "record.created" for _, kind, _ in emitted) == 50


def test_one_bad_signature_fails_the_whole_batch_and_names_its_index(key_client, growth_org, growth_gen):
    items = _items(*growth_gen, 5)
    items[3]["signature"] = items[2]["signature"]
    response = key_client(growth_org).post(URL, {"records": items}, format="json")
    assert response.status_code == 400
    body = response.json()
    assert body["error"] == "validation_error" and list(body["details"]["records"]) == ["3"]
    assert "signature_invalid" in body["details"]["records"]["3"][0]
    assert not Record.objects.exists() and not UsageCounter.objects.filter(signatures_used__gt=0).exists()


def test_a_foreign_generator_in_a_batch_fails_it(key_client, growth_org, growth_gen, other_org):
    foreign, seed = factories.make_client_generator(org=other_org)
    items = [*_items(*growth_gen, 2), factories.record_body(generator=foreign, seed=seed)]
    response = key_client(growth_org).post(URL, {"records": items}, format="json")
    assert response.status_code == 400 and "forbidden" in response.json()["details"]["records"]["2"][0]
    assert not Record.objects.exists()


def test_a_shape_error_in_one_item_is_400(key_client, growth_org, growth_gen):
    items = _items(*growth_gen, 3)
    items[1]["content_hash"] = "nope"
    response = key_client(growth_org).post(URL, {"records": items}, format="json")
    assert response.status_code == 400 and response.json()["error"] == "validation_error"


def test_more_than_50_items_are_400(key_client, growth_org, growth_gen):
    items = _items(*growth_gen, 1) * 51
    response = key_client(growth_org).post(URL, {"records": items}, format="json")
    assert response.status_code == 400 and "records" in response.json()["details"]


@pytest.mark.parametrize("body", [{"records": []}, {}, {"records": "x"}, []])
def test_empty_or_malformed_batches_are_400(key_client, growth_org, growth_gen, body):
    assert key_client(growth_org).post(URL, body, format="json").status_code == 400


def test_a_body_over_10_mb_is_413(key_client, growth_org, growth_gen):
    raw = b'{"records": [' + b'"' + b"x" * (10 * 1024 * 1024) + b'"]}'
    response = key_client(growth_org).post(URL, data=raw, content_type="application/json")
    assert response.status_code == 413 and response.json()["error"] == "payload_too_large"


def test_a_batch_under_10_mb_is_not_refused_for_size(key_client, growth_org, growth_gen):
    items = _items(*growth_gen, 2)
    items[0]["model"] = "m" * 2_000_000  # 2 MB: over the default 1 MB, under the batch limit
    response = key_client(growth_org).post(URL, {"records": items}, format="json")
    assert response.status_code == 400 and "model" in str(response.json()["details"])


@pytest.mark.parametrize("plan", ["free", "starter"])
def test_batches_need_growth_or_above(key_client, plan):
    org = factories.make_org(plan=plan)
    factories.make_user(org=org)
    generator, seed = factories.make_client_generator(org=org)
    response = key_client(org).post(URL, {"records": _items(generator, seed, 1)}, format="json")
    assert response.status_code == 402 and response.json()["error"] == "plan_required"


def test_batches_need_a_verified_owner(key_client, growth_org):
    factories.make_user(org=growth_org, role="owner", verified=False)
    generator, seed = factories.make_client_generator(org=growth_org)
    response = key_client(growth_org).post(URL, {"records": _items(generator, seed, 1)}, format="json")
    assert response.status_code == 403 and response.json()["error"] == "email_not_verified"


def test_batch_signatures_are_base64_of_the_right_length(key_client, growth_org, growth_gen):
    items = _items(*growth_gen, 1)
    items[0]["signature"] = base64.b64encode(b"short").decode()
    assert key_client(growth_org).post(URL, {"records": items}, format="json").status_code == 400


def test_a_large_batch_checked_in_parallel_names_every_bad_signature(key_client, growth_org, growth_gen):
    items = _items(*growth_gen, 20)
    items[4]["signature"], items[17]["signature"] = items[5]["signature"], items[0]["signature"]
    response = key_client(growth_org).post(URL, {"records": items}, format="json")
    assert response.status_code == 400
    failing = response.json()["details"]["records"]
    assert list(failing) == ["4", "17"] and all("signature_invalid" in m[0] for m in failing.values())
    assert not Record.objects.exists()
