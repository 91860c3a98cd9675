"""Delivering events to endpoints, logging every attempt and counting failures (spec, Events rules 1-7).

A round is what one committed action announces: every (event, subscribed active endpoint) pair is
one delivery. Endpoints are served concurrently, one lane each on a per-process thread pool; a lane
sends its endpoint's deliveries in order. All rounds of one HTTP request share one deadline,
`WEBHOOK_TIMEOUT_SECONDS` (10) from the first round's start, so hanging endpoints cost a request at
most that, whatever it sends (outside a request, each round gets its own).
A delivery not yet sent when the deadline passes is logged as failed without being counted against
the endpoint (it never had its chance); one that was sent and did not answer 2xx in time counts.
Lanes do network work only; the database is read and written in the request's thread.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import uuid
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from datetime import datetime

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models import F
from django.utils import timezone

from accounts.models import Organization
from config.hot_sql import RowInserter
from config.sealing import SealedBlobError
from webhooks import transport
from webhooks.models import FAILURES_BEFORE_FAILING, WebhookDelivery, WebhookEndpoint
from webhooks.services import ActiveEndpoint, active_endpoints, endpoints_snapshot_refresh, org_row_lock, webhook_secret
from webhooks.signing import HEADER, signature_header
from webhooks.targets import TargetRefused, target_check
from webhooks.transport import Outcome

logger = logging.getLogger(__name__)

_insert_deliveries = RowInserter(WebhookDelivery).insert  # every round writes the log: SQL built once
Endpoint = WebhookEndpoint | ActiveEndpoint  # a row (retry) or the organization row's snapshot (rounds)
_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()
# How long past the deadline the request waits for a lane stuck where no timeout reaches (a slow DNS
# answer): the lane's sends are then logged as timed out, and it will not send once the deadline passed.
_LANE_GRACE_SECONDS = 0.5
_window = threading.local()  # the delivery deadline of the request this thread serves


def deliver_round(org: Organization, events: Sequence[tuple[str, dict]],
                  occurred_at: datetime) -> list[WebhookDelivery]:
    """Deliver `events` (kind, data) of `org` to its subscribed active endpoints; returns the logged deliveries."""
    kinds = {kind for kind, _ in events}
    endpoints = [endpoint for endpoint in active_endpoints(org) if kinds.intersection(endpoint.events)]
    if not endpoints:
        return []
    timestamp = occurred_at.isoformat().replace("+00:00", "Z")
    lanes = []
    for endpoint in endpoints:
        sends = []
        for kind, data in events:
            if kind in endpoint.events:
                delivery_id = uuid.uuid4()
                sends.append((delivery_id, kind, _envelope(delivery_id, kind, timestamp, org.pk, data)))
        lanes.append((endpoint, sends))
    outcomes = _run_lanes([(endpoint, [body for _, _, body in sends]) for endpoint, sends in lanes])
    logged = []
    for (endpoint, sends), lane_outcomes in zip(lanes, outcomes, strict=True):
        logged += [_log_entry(endpoint, delivery_id, kind, body, outcome)
                   for (delivery_id, kind, body), outcome in zip(sends, lane_outcomes, strict=True)]
    _store(logged)
    for endpoint, lane_outcomes in zip(endpoints, outcomes, strict=True):
        _count(endpoint, lane_outcomes)
    return logged


def delivery_retry(delivery: WebhookDelivery) -> WebhookDelivery:
    """Send a logged delivery's payload again with a fresh signature; returns the new log entry.

    Allowed whatever the endpoint's status (it is the organization's explicit request); the outcome
    counts toward the failure count only while the endpoint is active.
    """
    endpoint = delivery.endpoint
    body = delivery.payload.encode()
    [outcome] = _run_lanes([(endpoint, [body])])[0]
    entry = _log_entry(endpoint, uuid.uuid4(), delivery.event, body, outcome, retry_of=delivery)
    _store([entry])
    if endpoint.status == WebhookEndpoint.Status.ACTIVE:
        _count(endpoint, [outcome])
    return entry


def _envelope(delivery_id: uuid.UUID, kind: str, timestamp: str, org_id: uuid.UUID, data: dict) -> bytes:
    envelope = {"id": str(delivery_id), "event": kind, "timestamp": timestamp, "org_id": str(org_id), "data": data}
    return json.dumps(envelope, separators=(",", ":"), default=str).encode()


def request_window_open(**_) -> None:
    """request_started: this thread now serves a request, whose rounds will share one deadline."""
    _window.serving, _window.deadline = True, None


def request_window_close(**_) -> None:
    """request_finished."""
    _window.serving, _window.deadline = False, None


def _round_deadline(timeout: float) -> float:
    now = time.monotonic()
    if not getattr(_window, "serving", False):
        return now + timeout
    if _window.deadline is None:
        _window.deadline = now + timeout
    return _window.deadline


def _run_lanes(lanes: list[tuple[Endpoint, list[bytes]]]) -> list[list[Outcome]]:
    """Each endpoint's bodies sent in order, endpoints concurrently, all by one deadline."""
    timeout = settings.WEBHOOK_TIMEOUT_SECONDS
    deadline = _round_deadline(timeout)
    allow_private = settings.WEBHOOK_ALLOW_PRIVATE_TARGETS
    # Secrets are unsealed here, in the request's thread; lanes get only what they send.
    futures = []
    for endpoint, bodies in lanes:
        secret = _secret_or_none(endpoint)
        futures.append(None if secret is None else
                       _lane_pool().submit(_lane, endpoint.url, secret, bodies, deadline, allow_private))
    wait([future for future in futures if future], timeout=max(0.0, deadline - time.monotonic()) + _LANE_GRACE_SECONDS)
    results = []
    for future, (_, bodies) in zip(futures, lanes, strict=True):
        if future is None:  # the service's fault, not the endpoint's: not sent, not counted
            results.append([Outcome(None, "not sent: the endpoint's secret cannot be read", 0, attempted=False)]
                           * len(bodies))
        elif future.done() and future.exception() is None:
            results.append(future.result())
        else:
            if future.done():
                logger.error("webhook lane failed", exc_info=future.exception())
            results.append([Outcome(None, "timed out", round(timeout * 1000))] * len(bodies))
    return results


def _secret_or_none(endpoint: Endpoint) -> str | None:
    try:
        return webhook_secret(endpoint)
    except SealedBlobError:
        logger.error("the signing secret of webhook endpoint %s does not unseal (KEY_ENCRYPTION_KEY changed?)",
                     endpoint.id)
        return None


def _lane(url: str, secret: str, bodies: list[bytes], deadline: float, allow_private: bool) -> list[Outcome]:
    """One endpoint's deliveries: its target checked again (and resolved once), then each body signed and sent."""
    try:
        target = target_check(url, allow_private=allow_private)
    except TargetRefused as exc:
        return [Outcome(None, f"target refused: {exc}"[:300], 0)] * len(bodies)
    return [transport.post(target, body=body, headers={HEADER: signature_header(secret=secret, body=body)},
                           deadline=deadline)
            for body in bodies]


def _lane_pool() -> ThreadPoolExecutor:
    global _pool
    if _pool is None:  # made on first use: after a server forks its workers, one pool per process
        with _pool_lock:
            if _pool is None:
                _pool = ThreadPoolExecutor(max_workers=settings.WEBHOOK_DELIVERY_THREADS,
                                           thread_name_prefix="webhook-lane")
    return _pool


def _log_entry(endpoint: Endpoint, delivery_id: uuid.UUID, kind: str, body: bytes, outcome: Outcome,
               retry_of: WebhookDelivery | None = None) -> WebhookDelivery:
    return WebhookDelivery(
        id=delivery_id, org_id=endpoint.org_id, endpoint_id=endpoint.id, event=kind, payload=body.decode(),
        status=WebhookDelivery.Status.SUCCESS if outcome.ok else WebhookDelivery.Status.FAILED,
        response_code=outcome.status_code, latency_ms=outcome.latency_ms, error=outcome.error,
        retry_of=retry_of, created_at=timezone.now())


def _store(entries: list[WebhookDelivery]) -> None:
    """Write log entries in their own transaction, committed without waiting for the disk on PostgreSQL.

    An asynchronous commit is safe here: the deliveries are already sent, and a database crash can at
    worst forget the last fraction of a second of log entries, never make a half-written one. It spares
    every delivering request a second wait for a WAL flush after the one its own action committed.
    """
    try:
        with transaction.atomic():
            if connection.vendor == "postgresql":
                with connection.cursor() as cursor:
                    cursor.execute("SET LOCAL synchronous_commit TO OFF")
            _insert_deliveries(entries)
    except IntegrityError:
        # An endpoint was deleted during the round: its deliveries went with it.
        asked = {entry.endpoint_id for entry in entries}
        alive = set(WebhookEndpoint.objects.filter(pk__in=asked).values_list("pk", flat=True))
        _insert_deliveries([entry for entry in entries if entry.endpoint_id in alive])


def _count(endpoint: Endpoint, outcomes: list[Outcome]) -> None:
    """Consecutive failures (spec, States): any 2xx resets the count; the fifth failure in a row sets `failing`.

    A healthy endpoint that stays healthy writes nothing; any change of the count is written with the
    organization's snapshot of its endpoints, so the next round knows it without a query.
    """
    attempted = [outcome for outcome in outcomes if outcome.attempted]
    if not attempted:
        return
    last_success = max((i for i, outcome in enumerate(attempted) if outcome.ok), default=None)
    failures_since = len(attempted) if last_success is None else len(attempted) - 1 - last_success
    if last_success is not None and failures_since == 0 and endpoint.consecutive_failures == 0:
        return
    with transaction.atomic():
        org_row_lock(endpoint.org_id)  # before the endpoint row, as every endpoint change does
        active = WebhookEndpoint.objects.filter(pk=endpoint.id, status=WebhookEndpoint.Status.ACTIVE)
        if last_success is None:
            active.update(consecutive_failures=F("consecutive_failures") + failures_since)
        else:
            active.update(consecutive_failures=failures_since)
        if active.filter(consecutive_failures__gte=FAILURES_BEFORE_FAILING).update(
                status=WebhookEndpoint.Status.FAILING, updated_at=timezone.now()):
            logger.warning("webhook endpoint %s is failing after %d consecutive failures; deliveries stop",
                           endpoint.id, FAILURES_BEFORE_FAILING)
        endpoints_snapshot_refresh(endpoint.org_id)
