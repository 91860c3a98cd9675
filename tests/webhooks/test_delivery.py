"""Deliveries to a real receiver on 127.0.0.1: every event kind from where it happens, signatures,
filtering, failure counting, reactivation, retry, the delivery log, redirects and timeouts.

These tests commit (transaction=True): deliveries run after the triggering transaction commits,
within the request, exactly as in production.
"""

import base64
import io
import json
import os
import time
import uuid
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.core.signals import request_finished
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from accounts.models import Organization
from billing.services import plan_change
from provenance.models import Record
from tests import factories
from tests.media import photo_bytes, reencode_jpeg
from tests.waiting import wait_until
from webhooks import delivery
from webhooks.events import event_emit
from webhooks.models import NO_OUTCOME, WebhookDelivery, WebhookEndpoint

pytestmark = pytest.mark.django_db(transaction=True)
TIMEOUT = 1.5  # the tests' WEBHOOK_TIMEOUT_SECONDS (production: 10)
ENVELOPE = {"id", "event", "timestamp", "org_id", "data"}
ENTRY = {"delivery_id", "event", "status", "response_code", "latency_ms", "payload", "created_at"}


@pytest.fixture(autouse=True)
def _local_targets(settings):
    settings.WEBHOOK_ALLOW_PRIVATE_TARGETS = True
    settings.WEBHOOK_TIMEOUT_SECONDS = TIMEOUT


@pytest.fixture
def hook(org, owner, receiver):
    """hook(events, path="/hook"): an active endpoint of `org` on the receiver, its secret checked there."""

    def make(events=("record.created",), path="/hook", for_org=None):
        endpoint, secret = factories.make_webhook(org=for_org or org, url=receiver.url(path), events=list(events))
        receiver.expect_secret(path, secret)
        return endpoint

    return make


@pytest.fixture
def client_generator(org):
    return factories.make_client_generator(org=org)


def _record(key_client, org, client_generator, n=0):
    generator, seed = client_generator
    body = factories.record_body(generator=generator, seed=seed, content=f"content {n}".encode())
    response = key_client(org).post("/v1/records", body, format="json")
    assert response.status_code == 201, response.content
    return response.json()


def _deliveries(client, endpoint) -> list[dict]:
    response = client.get(f"/v1/webhooks/{endpoint.pk}/deliveries")
    assert response.status_code == 200, response.content
    return response.json()["deliveries"]


def _endpoint(endpoint) -> WebhookEndpoint:
    return WebhookEndpoint.objects.get(pk=endpoint.pk)


# --- the envelope, the signature and the log --------------------------------------------------------

def test_a_record_is_delivered_signed_in_the_envelope_and_logged(key_client, org, hook, receiver, client_generator):
    endpoint = hook()
    record = _record(key_client, org, client_generator)
    [request] = receiver.received()
    assert request.signature_ok is True
    assert request.headers["content-type"] == "application/json"
    assert request.headers["x-service-signature"].startswith("t=")
    envelope = request.json
    assert set(envelope) == ENVELOPE
    assert (envelope["event"], envelope["org_id"]) == ("record.created", str(org.pk))
    assert envelope["timestamp"].endswith("Z")
    assert envelope["data"]["record_id"] == record["record_id"]
    assert envelope["data"]["content_hash"] == Record.objects.get(pk=record["record_id"]).content_hash
    [entry] = _deliveries(key_client(org), endpoint)
    assert set(entry) == ENTRY
    assert entry["delivery_id"] == envelope["id"]  # the envelope's id is the delivery's
    assert (entry["event"], entry["status"], entry["response_code"]) == ("record.created", "success", 200)
    assert entry["payload"] == envelope and isinstance(entry["latency_ms"], int)
    assert entry["created_at"].endswith("Z")
    assert _endpoint(endpoint).consecutive_failures == 0


def test_a_batch_delivers_one_record_created_per_record(key_client, org, hook, receiver, client_generator):
    hook()
    generator, seed = client_generator
    records = [factories.record_body(generator=generator, seed=seed, content=f"batch {n}".encode()) for n in range(3)]
    response = key_client(org).post("/v1/records/batch", {"records": records}, format="json")
    assert response.status_code == 207, response.content
    stored = {r["record_id"] for r in response.json()["results"]}
    received = receiver.received()
    assert len(received) == 3 and all(r.signature_ok for r in received)
    assert {r.json["data"]["record_id"] for r in received} == stored
    assert len({r.json["id"] for r in received}) == 3


def test_server_managed_signing_delivers_record_created(key_client, org, hook, receiver):
    hook()
    generator = factories.make_generator(org=org, formats=["image"])
    response = key_client(org).post("/v1/sign", {"content": io.BytesIO(photo_bytes()), "model": "m",
                                                 "generator_id": str(generator.pk)}, format="multipart")
    assert response.status_code == 201
    [request] = receiver.received()
    assert request.json["data"]["record_id"] == response["X-Service-Record-Id"]


def test_verification_fires_attempted_and_tamper_detected_for_the_owning_organization(
        api_client, key_client, org, hook, receiver, other_org):
    hook(events=["verify.attempted", "verify.tamper_detected"])
    hook(events=["verify.attempted"], path="/other", for_org=Organization.objects.get(pk=other_org.pk))
    generator = factories.make_generator(org=org, formats=["image"])
    signed = key_client(org).post("/v1/sign", {"content": io.BytesIO(photo_bytes()), "model": "m",
                                               "generator_id": str(generator.pk)}, format="multipart")
    record_id = signed["X-Service-Record-Id"]
    clean = api_client.post("/v1/verify", {"content": io.BytesIO(signed.content)}, format="multipart")
    assert clean.json()["authentic"]
    tampered = reencode_jpeg(signed.content, quality=70)
    result = api_client.post("/v1/verify", {"content": io.BytesIO(tampered), "token": signed["X-Service-Token"]},
                             format="multipart").json()
    assert result["tampered"] is True
    kinds = [(r.json["event"], r.json["data"]["record_id"], r.json["data"]["tampered"])
             for r in receiver.received("/hook")]
    assert kinds == [("verify.attempted", record_id, False), ("verify.attempted", record_id, True),
                     ("verify.tamper_detected", record_id, True)]
    assert receiver.received("/other") == []  # the record is not the other organization's


def test_a_verification_batch_is_one_round(api_client, key_client, org, hook, receiver):
    hook(events=["verify.attempted"])
    generator = factories.make_generator(org=org, formats=["image"])
    signed = key_client(org).post("/v1/sign", {"content": io.BytesIO(photo_bytes()), "model": "m",
                                               "generator_id": str(generator.pk)}, format="multipart").content
    items = [{"content": base64.b64encode(signed).decode()}] * 2
    assert api_client.post("/v1/verify/batch", {"items": items}, format="json").status_code == 200
    assert [r.json["event"] for r in receiver.received()] == ["verify.attempted"] * 2


def test_quota_warning_and_limit_are_delivered_where_usage_crosses_them(key_client, org, hook, receiver,
                                                                         client_generator):
    hook(events=["quota.warning", "quota.limit"])
    included = 50_000  # Growth
    factories.set_usage(org, included * 8 // 10 - 1)
    _record(key_client, org, client_generator, 1)  # crosses 80%
    factories.set_usage(org, included - 1)
    _record(key_client, org, client_generator, 2)  # reaches the allowance: overage starts
    _record(key_client, org, client_generator, 3)
    events = [r.json for r in receiver.received()]
    assert [e["event"] for e in events] == ["quota.warning", "quota.limit"]
    assert events[0]["data"]["signatures_used"] == included * 8 // 10
    assert events[1]["data"] | {} == {"plan": "growth", "signatures_used": included, "signatures_included": included,
                                      "period_start": events[1]["data"]["period_start"], "blocked": False}


def test_generator_revocation_and_rotation_are_delivered(owner_client, org, hook, receiver):
    hook(events=["generator.revoked", "generator.key_rotated"])
    generator = factories.make_generator(org=org)
    assert owner_client.post(f"/v1/generators/{generator.pk}/rotate", {}, format="json").status_code == 200
    assert owner_client.put(f"/v1/generators/{generator.pk}/revoke").status_code == 200
    events = [r.json for r in receiver.received()]
    assert [e["event"] for e in events] == ["generator.key_rotated", "generator.revoked"]
    assert all(e["data"]["generator_id"] == str(generator.pk) for e in events)


def test_only_subscribed_kinds_reach_each_endpoint(owner_client, key_client, org, hook, receiver, client_generator):
    hook(events=["record.created"], path="/records")
    hook(events=["generator.revoked"], path="/revocations")
    _record(key_client, org, client_generator)
    generator = factories.make_generator(org=org)
    owner_client.put(f"/v1/generators/{generator.pk}/revoke")
    assert [r.json["event"] for r in receiver.received("/records")] == ["record.created"]
    assert [r.json["event"] for r in receiver.received("/revocations")] == ["generator.revoked"]


def test_an_event_of_a_rolled_back_change_is_never_sent(org, hook, receiver, settled):
    hook(events=["generator.revoked"])
    org.refresh_from_db()
    with pytest.raises(RuntimeError), transaction.atomic():
        event_emit(org=org, kind="generator.revoked", data={"generator_id": "g"})
        raise RuntimeError("the change fails")
    event_emit(org=org, kind="generator.revoked", data={"generator_id": "committed"})  # autocommit: sent at once
    settled()
    assert [r.json["data"]["generator_id"] for r in receiver.received()] == ["committed"]


def test_nothing_is_delivered_once_the_plan_drops_below_growth(key_client, org, hook, receiver, client_generator):
    hook()
    plan_change(org=org, plan="starter")
    _record(key_client, org, client_generator)
    assert receiver.received() == [] and not WebhookDelivery.objects.exists()


# --- failures, failing, reactivation -----------------------------------------------------------------

def test_five_failures_in_a_row_make_the_endpoint_failing_and_deliveries_stop(
        owner_client, key_client, org, hook, receiver, client_generator):
    endpoint = hook()
    receiver.respond("/hook", status=500)
    for n in range(5):
        assert _record(key_client, org, client_generator, n)  # each signing still succeeds
    assert (_endpoint(endpoint).status, _endpoint(endpoint).consecutive_failures) == ("failing", 5)
    assert Organization.objects.get(pk=org.pk).active_webhooks == []
    _record(key_client, org, client_generator, 99)
    assert len(receiver.received()) == 5  # a failing endpoint receives nothing
    entries = _deliveries(owner_client, endpoint)
    assert [(e["status"], e["response_code"]) for e in entries] == [("failed", 500)] * 5
    # Reactivation resets the count and deliveries resume.
    receiver.respond("/hook", status=204)
    body = owner_client.patch(f"/v1/webhooks/{endpoint.pk}", {"status": "active"}, format="json").json()
    assert (body["status"], body["failure_count"]) == ("active", 0)
    _record(key_client, org, client_generator, 100)
    assert len(receiver.received()) == 6 and _endpoint(endpoint).consecutive_failures == 0


def test_a_2xx_resets_the_count(key_client, org, hook, receiver, client_generator):
    endpoint = hook()
    receiver.respond("/hook", status=503)
    for n in range(3):
        _record(key_client, org, client_generator, n)
    assert _endpoint(endpoint).consecutive_failures == 3
    receiver.respond("/hook", status=202)
    _record(key_client, org, client_generator, 3)
    assert (_endpoint(endpoint).status, _endpoint(endpoint).consecutive_failures) == ("active", 0)


def test_a_disabled_endpoint_receives_nothing_until_reactivated(owner_client, key_client, org, hook, receiver,
                                                                 client_generator):
    endpoint = hook()
    assert owner_client.patch(f"/v1/webhooks/{endpoint.pk}", {"status": "disabled"}, format="json").status_code == 200
    _record(key_client, org, client_generator, 1)
    assert receiver.received() == []
    owner_client.patch(f"/v1/webhooks/{endpoint.pk}", {"status": "active"}, format="json")
    _record(key_client, org, client_generator, 2)
    assert len(receiver.received()) == 1


def test_a_redirect_is_not_followed_and_counts_as_a_failure(owner_client, key_client, org, hook, receiver,
                                                            client_generator):
    endpoint = hook()
    receiver.respond("/hook", status=302, location=receiver.url("/elsewhere"))
    _record(key_client, org, client_generator)
    assert [r.path for r in receiver.received()] == ["/hook"]
    [entry] = _deliveries(owner_client, endpoint)
    assert (entry["status"], entry["response_code"]) == ("failed", 302)
    assert _endpoint(endpoint).consecutive_failures == 1


def test_a_hanging_receiver_never_holds_the_request_and_is_logged_failed_once(owner_client, key_client, org, hook,
                                                                               receiver, client_generator, settled):
    endpoint = hook()
    receiver.respond("/hook", delay=TIMEOUT * 40)
    request_finished.disconnect(dispatch_uid="tests.webhooks.settled")  # the request returns as in a server
    record = _record(key_client, org, client_generator)
    assert Record.objects.filter(pk=record["record_id"]).exists()
    assert _deliveries(owner_client, endpoint) == []  # in flight: not in the log until its outcome is known
    [row] = WebhookDelivery.objects.filter(endpoint=endpoint)
    assert (row.status, row.pending, row.error) == ("failed", True, NO_OUTCOME)  # written before it was sent
    wait_until(lambda: receiver.held("/hook") == 1, pids=lambda: [os.getpid()], cpu_budget=30,
               what="the delivery reaches the receiver, which holds it")
    assert WebhookDelivery.objects.get(pk=row.pk).pending  # the request was answered; the delivery goes on
    settled()
    [entry] = _deliveries(owner_client, endpoint)
    # Failed with no answer: the timeout ended it (the receiver would have answered 200 after 40 timeouts).
    assert (entry["status"], entry["response_code"]) == ("failed", None)
    assert entry["latency_ms"] >= TIMEOUT * 1000 - 50
    assert _endpoint(endpoint).consecutive_failures == 1


def test_one_organizations_hanging_lanes_hold_only_its_share_of_the_threads(org, hook, receiver):
    # A small dispatcher: 3 threads, 2 lanes of one organization at once, 2 more waiting.
    dispatcher = delivery._Dispatcher(threads=3, per_org=2, waiting=2)
    saved = delivery._state.dispatcher, delivery._state.pid
    delivery._state.dispatcher, delivery._state.pid = dispatcher, os.getpid()
    try:
        _hold_one_organization(org, hook, receiver, dispatcher)
    finally:
        dispatcher.close()
        delivery._state.dispatcher, delivery._state.pid = saved


def _hold_one_organization(org, hook, receiver, dispatcher):
    receiver.respond("/hang", delay=TIMEOUT * 40)
    hanging = hook(events=["generator.revoked"], path="/hang")
    other = factories.make_org(plan="growth", name="B")
    other_hook = hook(events=["generator.revoked"], path="/b", for_org=other)
    org.refresh_from_db()
    for n in range(5):  # five rounds of A: 2 run, 2 wait, 1 has no room
        event_emit(org=org, kind="generator.revoked", data={"generator_id": f"a{n}"})
    wait_until(lambda: receiver.held("/hang") == 2, pids=lambda: [os.getpid()], cpu_budget=30,
               what="two of A's deliveries are at the hanging receiver")
    other.refresh_from_db()
    event_emit(org=other, kind="generator.revoked", data={"generator_id": "b"})
    wait_until(lambda: receiver.received("/b"), pids=lambda: [os.getpid()], cpu_budget=30,
               what="B's delivery arrives")
    assert receiver.held("/hang") == 2  # B was served beside them, and A got no third thread
    assert dispatcher.settle(timeout=120)
    rows = WebhookDelivery.objects.filter(endpoint=hanging).order_by("created_at")
    assert [row.status for row in rows] == ["failed"] * 5 and not any(row.pending for row in rows)
    errors = [row.error.split(":")[0] for row in rows]
    assert set(errors) == {"not sent", "timed out"} and errors.count("timed out") >= 2
    assert _endpoint(hanging).consecutive_failures == errors.count("timed out")  # each sent one, once
    assert [row.status for row in WebhookDelivery.objects.filter(endpoint=other_hook)] == ["success"]


def test_a_delivery_whose_process_died_shows_as_failed_once_its_window_is_long_past(owner_client, key_client, org,
                                                                                    hook, receiver, client_generator):
    endpoint = hook()
    _record(key_client, org, client_generator)
    [row] = WebhookDelivery.objects.filter(endpoint=endpoint)
    # As a process killed mid-delivery leaves it: written before sending, never settled.
    WebhookDelivery.objects.filter(pk=row.pk).update(pending=True, status="failed", response_code=None,
                                                     latency_ms=0, error=NO_OUTCOME)
    assert _deliveries(owner_client, endpoint) == []  # it might still be in flight
    WebhookDelivery.objects.filter(pk=row.pk).update(created_at=timezone.now() - timedelta(minutes=5))
    [entry] = _deliveries(owner_client, endpoint)
    assert (entry["status"], entry["response_code"], entry["latency_ms"]) == ("failed", None, 0)


def test_endpoints_are_served_concurrently_within_one_window(owner_client, key_client, org, hook, receiver,
                                                             client_generator):
    slow = [hook(path=f"/slow{n}") for n in range(3)]
    fast = hook(path="/fast")
    for endpoint in slow:
        receiver.respond(f"/slow{slow.index(endpoint)}", delay=TIMEOUT * 4)
    _record(key_client, org, client_generator)
    # Three hanging endpoints cost one timeout, not three: the last of them arrived while the senders of the
    # other two still waited (one after another, each sender would have given up first). Counted, not timed.
    hanging = [request for request in receiver.received() if request.path.startswith("/slow")]
    assert len(hanging) == 3 and max(request.alongside for request in hanging) == 2, hanging
    assert [e["status"] for e in _deliveries(owner_client, fast)] == ["success"]


def test_a_closed_port_is_a_failure_with_no_response_code(owner_client, key_client, org, client_generator):
    endpoint, _ = factories.make_webhook(org=org, url="http://127.0.0.1:9/hook", events=["record.created"])
    _record(key_client, org, client_generator)
    [entry] = _deliveries(owner_client, endpoint)
    assert (entry["status"], entry["response_code"]) == ("failed", None)
    assert WebhookDelivery.objects.get(pk=entry["delivery_id"]).error.startswith("connection failed")


# --- SSRF at delivery time ----------------------------------------------------------------------------

def test_delivery_connects_to_the_address_it_checked_without_a_second_lookup(key_client, org, receiver,
                                                                             resolve_to, client_generator):
    _, secret = factories.make_webhook(org=org, url=f"http://hooks.test:{receiver.port}/hook",
                                       events=["record.created"])
    receiver.expect_secret("/hook", secret)
    asked = resolve_to("127.0.0.1")
    asked.clear()  # the lookup of the creation
    _record(key_client, org, client_generator)
    assert asked == ["hooks.test"]  # one lookup per round, and the connection went to its answer
    [request] = receiver.received()
    assert request.signature_ok and request.headers["host"] == f"hooks.test:{receiver.port}"


def test_a_name_that_now_resolves_to_loopback_is_refused_at_delivery(settings, key_client, org, receiver,
                                                                     resolve_to, client_generator):
    settings.WEBHOOK_ALLOW_PRIVATE_TARGETS = False
    endpoint, _ = factories.make_webhook(org=org, url=f"https://hooks.test:{receiver.port}/hook",
                                         events=["record.created"])  # resolves to a public address here
    resolve_to("127.0.0.1")  # DNS rebinding: the name now points inside
    _record(key_client, org, client_generator)
    assert receiver.received() == []
    entry = WebhookDelivery.objects.get(endpoint=endpoint)
    assert entry.status == "failed" and entry.error.startswith("target refused")


# --- retry -------------------------------------------------------------------------------------------

def test_retry_resends_the_stored_payload_with_a_fresh_signature_and_logs_a_new_delivery(
        owner_client, key_client, org, hook, receiver, client_generator):
    endpoint = hook()
    receiver.respond("/hook", status=500)
    _record(key_client, org, client_generator)
    [failed] = _deliveries(owner_client, endpoint)
    receiver.respond("/hook", status=200)
    time.sleep(1.1)  # so the fresh signature's timestamp differs
    response = owner_client.post(f"/v1/webhooks/{endpoint.pk}/deliveries/{failed['delivery_id']}/retry")
    assert response.status_code == 200, response.content
    retried = response.json()
    assert set(retried) == ENTRY and retried["delivery_id"] != failed["delivery_id"]
    assert (retried["status"], retried["response_code"]) == ("success", 200)
    assert retried["payload"] == failed["payload"]
    first, second = receiver.received()
    assert first.body == second.body and second.signature_ok  # the same bytes (same id: receivers dedupe)
    assert first.headers["x-service-signature"] != second.headers["x-service-signature"]
    assert [e["delivery_id"] for e in _deliveries(owner_client, endpoint)] == [retried["delivery_id"],
                                                                              failed["delivery_id"]]
    assert _endpoint(endpoint).consecutive_failures == 0


def test_retry_works_on_a_failing_endpoint_without_reactivating_it(owner_client, key_client, org, hook, receiver,
                                                                   client_generator):
    endpoint = hook()
    receiver.respond("/hook", status=500)
    for n in range(5):
        _record(key_client, org, client_generator, n)
    last = _deliveries(owner_client, endpoint)[0]
    receiver.respond("/hook", status=200)
    response = owner_client.post(f"/v1/webhooks/{endpoint.pk}/deliveries/{last['delivery_id']}/retry")
    assert response.json()["status"] == "success"
    assert (_endpoint(endpoint).status, _endpoint(endpoint).consecutive_failures) == ("failing", 5)


# --- the log and its 30 days -------------------------------------------------------------------------

def test_the_log_is_newest_first_pages_and_hides_entries_past_30_days(owner_client, key_client, org, hook, receiver,
                                                                      client_generator):
    endpoint = hook()
    for n in range(3):
        _record(key_client, org, client_generator, n)
    old = WebhookDelivery.objects.filter(endpoint=endpoint).order_by("created_at").first()
    WebhookDelivery.objects.filter(pk=old.pk).update(created_at=timezone.now() - timedelta(days=31))
    entries = _deliveries(owner_client, endpoint)
    assert len(entries) == 2 and str(old.pk) not in {e["delivery_id"] for e in entries}
    assert entries[0]["created_at"] >= entries[1]["created_at"]
    page = owner_client.get(f"/v1/webhooks/{endpoint.pk}/deliveries?limit=1&page=2").json()["deliveries"]
    assert [e["delivery_id"] for e in page] == [entries[1]["delivery_id"]]
    assert owner_client.post(f"/v1/webhooks/{endpoint.pk}/deliveries/{old.pk}/retry").status_code == 404
    call_command("prune_webhook_deliveries", stdout=io.StringIO())
    assert not WebhookDelivery.objects.filter(pk=old.pk).exists()
    assert WebhookDelivery.objects.filter(endpoint=endpoint).count() == 2


def test_bad_log_queries_are_400(owner_client, org, hook):
    endpoint = hook()
    for query in ("page=0", "limit=0", "limit=x"):
        response = owner_client.get(f"/v1/webhooks/{endpoint.pk}/deliveries?{query}")
        assert response.status_code == 400 and response.json()["error"] == "validation_error"


# --- organizations stay apart ------------------------------------------------------------------------

def test_another_organizations_endpoints_and_deliveries_are_404_on_every_route(
        owner_client, key_client, org, other_org, hook, receiver, client_generator):
    mine = hook()
    other_org = Organization.objects.get(pk=other_org.pk)
    plan_change(org=other_org, plan="growth")
    theirs = hook(path="/theirs", for_org=other_org)
    _record(key_client, org, client_generator)
    event_emit(org=Organization.objects.get(pk=other_org.pk), kind="record.created", data={"n": 1})
    my_delivery = WebhookDelivery.objects.get(endpoint=mine)
    their_delivery = WebhookDelivery.objects.get(endpoint=theirs)
    for client in (owner_client, key_client(org)):
        assert client.get(f"/v1/webhooks/{theirs.pk}/deliveries").status_code == 404
        assert client.post(f"/v1/webhooks/{theirs.pk}/deliveries/{their_delivery.pk}/retry").status_code == 404
        # Their delivery under my endpoint, my delivery under theirs, an unknown id: all 404.
        assert client.post(f"/v1/webhooks/{mine.pk}/deliveries/{their_delivery.pk}/retry").status_code == 404
        assert client.post(f"/v1/webhooks/{theirs.pk}/deliveries/{my_delivery.pk}/retry").status_code == 404
        assert client.post(f"/v1/webhooks/{mine.pk}/deliveries/{uuid.uuid4()}/retry").status_code == 404
    assert len(receiver.received("/theirs")) == 1  # no retry reached them


def test_the_log_and_retry_need_a_credential_and_the_plan(api_client, org, hook, session_client):
    endpoint = hook()
    assert api_client.get(f"/v1/webhooks/{endpoint.pk}/deliveries").status_code == 401
    starter = factories.make_org(plan="starter")
    client = session_client(factories.make_user(org=starter, role="owner"))
    assert client.get(f"/v1/webhooks/{uuid.uuid4()}/deliveries").json()["error"] == "plan_required"


def test_the_stored_payload_is_the_exact_body_sent(key_client, org, hook, receiver, client_generator):
    hook()
    _record(key_client, org, client_generator)
    [request] = receiver.received()
    assert WebhookDelivery.objects.get().payload.encode() == request.body
    assert json.loads(request.body)["id"] == str(WebhookDelivery.objects.get().pk)


@pytest.mark.skipif(connection.vendor != "postgresql", reason="asynchronous commit is PostgreSQL's")
def test_the_log_is_committed_without_waiting_for_the_disk(key_client, org, hook, receiver, client_generator):
    hook()
    with CaptureQueriesContext(connection) as captured:
        _record(key_client, org, client_generator)
    statements = [query["sql"] for query in captured.captured_queries]
    at = next(i for i, sql in enumerate(statements) if "INSERT INTO" in sql and "webhookdelivery" in sql)
    assert statements[at - 1] == "SET LOCAL synchronous_commit TO OFF"
    records = next(i for i, sql in enumerate(statements) if "INSERT INTO" in sql and "provenance_record" in sql)
    assert "synchronous_commit" not in " ".join(statements[:records])  # the record itself commits durably


def test_a_secret_that_no_longer_unseals_is_logged_unsent_and_never_fails_the_action(owner_client, key_client, org,
                                                                                     hook, receiver, client_generator,
                                                                                     settings):
    endpoint = hook()
    settings.KEY_ENCRYPTION_KEY = "another-key-encryption-key-0123456789abcdef"  # the sealing key was changed
    _record(key_client, org, client_generator)  # still 201
    assert receiver.received() == []
    entry = WebhookDelivery.objects.get(endpoint=endpoint)
    assert entry.status == "failed" and entry.error.startswith("not sent: the endpoint's secret")
    assert _endpoint(endpoint).consecutive_failures == 0  # the service's fault, not the endpoint's
    retried = owner_client.post(f"/v1/webhooks/{endpoint.pk}/deliveries/{entry.pk}/retry")
    assert retried.status_code == 200 and retried.json()["status"] == "failed"


def test_one_retry_of_an_organization_runs_at_a_time_and_others_are_not_held(
        owner_client, key_client, org, hook, receiver, client_generator):
    """While a retry of an organization waits for its endpoint (in any process: the slot is in the shared
    cache), another retry of that organization is 429 before anything is sent; other organizations'
    retries are not affected, and the slot is free again once the retry has its answer."""
    from django.core.cache import cache

    endpoint = hook()
    receiver.respond("/hook", status=500)
    _record(key_client, org, client_generator)
    [failed] = _deliveries(owner_client, endpoint)
    url = f"/v1/webhooks/{endpoint.pk}/deliveries/{failed['delivery_id']}/retry"
    cache.add(f"webhooks:retry:{org.pk}", 0, timeout=60)  # a retry in flight elsewhere
    refused = owner_client.post(url)
    assert refused.status_code == 429 and refused.json()["error"] == "rate_limited"
    assert int(refused["Retry-After"]) > TIMEOUT
    assert len(receiver.received("/hook")) == 1  # nothing sent again
    other = factories.make_org(plan="growth", name="Other")
    theirs = hook(events=["generator.revoked"], path="/theirs", for_org=other)
    other.refresh_from_db()  # its endpoints' snapshot, as a request loads it
    event_emit(org=other, kind="generator.revoked", data={"generator_id": "g"})
    assert delivery.deliveries_settle(timeout=60)
    [their_delivery] = WebhookDelivery.objects.filter(endpoint=theirs)
    assert delivery.delivery_retry(their_delivery).status == "success"  # their slot is their own
    cache.delete(f"webhooks:retry:{org.pk}")
    receiver.respond("/hook", status=200)
    assert owner_client.post(url).json()["status"] == "success"
    assert cache.get(f"webhooks:retry:{org.pk}") is None  # released with its answer
    assert owner_client.post(url).status_code == 200
