"""`Idempotency-Key` on the routes that sign or store: a retry replays the first response and does nothing
again; the same key with another request is 409; keys are per organization and last 24 hours."""

import io
import json
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.test.client import encode_multipart
from django.utils import timezone

from audit.models import AuditEvent
from billing.models import UsageCounter
from core.models import IdempotentRequest
from provenance.models import Record
from tests import factories
from tests.media import photo_bytes

pytestmark = pytest.mark.django_db
KEY = "b3c1e0c2-7a0d-4a44-9d0a-6f3f3b1f0e11"


def _headers(response) -> dict:
    """The response's own headers: the per-request ones (id, rate limit) differ between any two requests."""
    skip = ("x-request-id", "x-ratelimit-", "idempotent-replayed")
    return {name.lower(): value for name, value in response.items() if not name.lower().startswith(skip)}


def _post_record(client, body: dict, key: str | None = KEY):
    extra = {"HTTP_IDEMPOTENCY_KEY": key} if key is not None else {}
    return client.post("/v1/records", body, format="json", **extra)


@pytest.fixture
def client_gen(org):
    return factories.make_client_generator(org=org)


@pytest.fixture
def body(client_gen):
    return factories.record_body(generator=client_gen[0], seed=client_gen[1])


def test_a_retried_record_replays_the_first_response_and_stores_nothing_more(key_client, org, body, emitted):
    client = key_client(org)
    first = _post_record(client, body)
    again = _post_record(client, body)
    assert first.status_code == again.status_code == 201
    assert again.content == first.content and _headers(again) == _headers(first)
    assert again["Idempotent-Replayed"] == "true" and "Idempotent-Replayed" not in first
    assert Record.objects.filter(org=org).count() == 1
    assert UsageCounter.objects.get(org=org).signatures_used == 1
    assert AuditEvent.objects.filter(org=org, type="sign").count() == 1
    assert [kind for _, kind, _ in emitted] == ["record.created"]


def test_the_body_is_compared_by_value_not_by_spelling(key_client, org, body):
    client = key_client(org)
    assert _post_record(client, body).status_code == 201
    respelled = json.dumps(dict(reversed(list(body.items()))), indent=2)
    again = client.post("/v1/records", respelled, content_type="application/json", HTTP_IDEMPOTENCY_KEY=KEY)
    assert again.status_code == 201 and again["Idempotent-Replayed"] == "true"
    assert Record.objects.filter(org=org).count() == 1


def test_the_same_key_with_another_request_is_409_idempotency_conflict(key_client, org, client_gen, body):
    client = key_client(org)
    assert _post_record(client, body).status_code == 201
    other = factories.record_body(generator=client_gen[0], seed=client_gen[1], content=b"other content")
    conflict = _post_record(client, other)
    assert conflict.status_code == 409
    assert conflict.json()["error"] == "idempotency_conflict"
    # Another route with the same key is another request too.
    batch = client.post("/v1/records/batch", {"records": [body]}, format="json", HTTP_IDEMPOTENCY_KEY=KEY)
    assert batch.status_code == 409 and batch.json()["error"] == "idempotency_conflict"
    assert Record.objects.filter(org=org).count() == 1


def test_keys_belong_to_the_organization(key_client, org, other_org, body):
    assert _post_record(key_client(org), body).status_code == 201
    theirs_gen, theirs_seed = factories.make_client_generator(org=other_org)
    theirs = _post_record(key_client(other_org), factories.record_body(generator=theirs_gen, seed=theirs_seed))
    assert theirs.status_code == 201 and "Idempotent-Replayed" not in theirs
    assert Record.objects.filter(org=other_org).count() == 1
    # The organization's members share its keys: a session of the same organization gets the replay.
    session = _session_of(factories.make_user(org=org))
    replayed = _post_record(session, body)
    assert replayed.status_code == 201 and replayed["Idempotent-Replayed"] == "true"


def _session_of(user):
    from rest_framework.test import APIClient

    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {factories.session_token(user)}")
    return client


def test_after_24_hours_the_key_runs_afresh_and_purge_expired_deletes_it(key_client, org, body):
    client = key_client(org)
    first = _post_record(client, body)
    IdempotentRequest.objects.update(created_at=timezone.now() - timedelta(hours=24, seconds=1))
    again = _post_record(client, body)
    assert again.status_code == 201 and "Idempotent-Replayed" not in again
    assert again.json()["record_id"] != first.json()["record_id"]
    assert IdempotentRequest.objects.count() == 1
    IdempotentRequest.objects.update(created_at=timezone.now() - timedelta(hours=25))
    fresh_gen, fresh_seed = factories.make_client_generator(org=org, name="fresh")
    _post_record(client, factories.record_body(generator=fresh_gen, seed=fresh_seed), key="a-fresh-key")
    call_command("purge_expired", stdout=io.StringIO())
    assert list(IdempotentRequest.objects.values_list("key", flat=True)) == ["a-fresh-key"]


def test_a_refusal_from_the_route_is_kept_and_replayed(key_client, org, body):
    client = key_client(org)
    changed = {"model": "changed-after-signing"}
    forged = {**body, **changed, "signed_payload": {**body["signed_payload"], **changed}}
    first = _post_record(client, forged)
    assert first.status_code == 400 and first.json()["error"] == "signature_invalid"
    again = _post_record(client, forged)
    assert (again.status_code, again.content, again["Idempotent-Replayed"]) == (400, first.content, "true")
    assert _post_record(client, body).json()["error"] == "idempotency_conflict"


def test_a_request_refused_before_the_route_runs_leaves_the_key_free(key_client, org, body):
    client = key_client(org)
    broken = client.post("/v1/records", "{not json", content_type="application/json", HTTP_IDEMPOTENCY_KEY=KEY)
    assert broken.status_code == 400
    assert IdempotentRequest.objects.count() == 0
    assert _post_record(client, body).status_code == 201


def test_a_request_without_a_key_is_not_kept(key_client, org, body):
    client = key_client(org)
    assert _post_record(client, body, key=None).status_code == 201
    assert _post_record(client, body, key=None).status_code == 201
    assert Record.objects.filter(org=org).count() == 2 and IdempotentRequest.objects.count() == 0


@pytest.mark.parametrize("key", ["k" * 256, "", "with space", "caf\u00e9", "tab\there"])
def test_a_malformed_key_is_400_validation_error(key_client, org, body, key):
    response = _post_record(key_client(org), body, key=key)
    assert response.status_code == 400
    assert response.json()["error"] == "validation_error"
    assert Record.objects.count() == 0


def test_a_key_of_255_characters_is_taken(key_client, org, body):
    assert _post_record(key_client(org), body, key="~" * 255).status_code == 201


def test_a_retried_signature_returns_the_same_file_without_signing_again(key_client, org):
    generator = factories.make_generator(org=org, formats=["image"])
    client = key_client(org)
    fields = {"content": photo_bytes(), "model": "diffusion-xl", "generator_id": str(generator.pk)}

    def sign(boundary: str):
        # Each upload has its own multipart boundary, as curl and browsers make them: it is not the request.
        form = {**fields, "content": io.BytesIO(fields["content"])}
        return client.post("/v1/sign", encode_multipart(boundary, form),
                           content_type=f"multipart/form-data; boundary={boundary}", HTTP_IDEMPOTENCY_KEY=KEY)

    first, again = sign("first-boundary-1234"), sign("another-boundary-98")
    assert first.status_code == again.status_code == 201
    assert again.content == first.content and _headers(again) == _headers(first)
    assert again["X-Service-Record-Id"] == first["X-Service-Record-Id"] and again["Idempotent-Replayed"] == "true"
    assert Record.objects.filter(org=org).count() == 1
    assert UsageCounter.objects.get(org=org).signatures_used == 1
    other_file = {**fields, "content": io.BytesIO(photo_bytes("coffee"))}
    conflict = client.post("/v1/sign", other_file, format="multipart", HTTP_IDEMPOTENCY_KEY=KEY)
    assert conflict.status_code == 409


def test_a_retried_batch_and_embed_replay_their_responses(key_client, growth_org, emitted):
    factories.make_user(org=growth_org, role="owner")
    client = key_client(growth_org)
    generator, seed = factories.make_client_generator(org=growth_org)
    items = [factories.record_body(generator=generator, seed=seed, content=f"{i}".encode()) for i in range(3)]
    batch = [client.post("/v1/records/batch", {"records": items}, format="json", HTTP_IDEMPOTENCY_KEY="batch-1")
             for _ in range(2)]
    assert batch[0].status_code == batch[1].status_code == 207 and batch[0].content == batch[1].content
    assert Record.objects.filter(org=growth_org).count() == 3

    server = factories.make_generator(org=growth_org, formats=["image"])
    signed = client.post("/v1/sign", {"content": io.BytesIO(photo_bytes()), "model": "m",
                                      "generator_id": str(server.pk)}, format="multipart")
    url = f"/v1/records/{signed['X-Service-Record-Id']}/c2pa/embed"
    embeds = [client.post(url, {"content": io.BytesIO(signed.content)}, format="multipart",
                          HTTP_IDEMPOTENCY_KEY="embed-1") for _ in range(2)]
    assert embeds[0].status_code == embeds[1].status_code == 200
    assert embeds[1].content == embeds[0].content and embeds[1]["Idempotent-Replayed"] == "true"
    assert embeds[0]["Content-Type"] == embeds[1]["Content-Type"] == "image/jpeg"
    assert UsageCounter.objects.get(org=growth_org).signatures_used == 4
    assert [kind for _, kind, _ in emitted].count("record.created") == 4


def test_a_refusal_over_the_quota_is_replayed_without_counting_again(key_client, org, body):
    factories.set_usage(org, 500)  # the free plan's allowance, used up
    client = key_client(org)
    first, again = _post_record(client, body), _post_record(client, body)
    assert first.status_code == again.status_code == 402
    assert again.content == first.content and again["Idempotent-Replayed"] == "true"
    assert UsageCounter.objects.get(org=org).signatures_used == 500 and Record.objects.count() == 0


def test_the_prefer_header_is_part_of_the_request(key_client, org, body):
    client = key_client(org)
    assert _post_record(client, body).status_code == 201
    other = client.post("/v1/records", body, format="json", HTTP_IDEMPOTENCY_KEY=KEY, HTTP_PREFER="respond-async")
    assert other.status_code == 409 and other.json()["error"] == "idempotency_conflict"
