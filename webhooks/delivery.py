"""Delivering events to endpoints, logging every attempt and counting failures (spec, Events rules 1-7).

A round is what one committed action announces: every (event, subscribed active endpoint) pair is
one delivery. The request's thread writes each delivery's log row first (`pending`, and already saying
"no outcome recorded" so a process that dies mid-delivery leaves an honest row), then hands one lane
per endpoint to this process's dispatcher and returns to answer its client: the sends start within
the request cycle, but no request thread waits on an endpoint. A lane sends its endpoint's deliveries
in order; endpoints are served concurrently. A log writer thread (one per process, one database
connection) settles each row with its outcome and counts failures, exactly once per attempted send.

Isolation: at most `ORG_LANES` lanes of one organization run at once in a process (the rest wait in
that organization's queue, at most `ORG_WAITING` of them), so one organization's hanging endpoints
hold at most that many of the `WEBHOOK_DELIVERY_THREADS` threads and never a request thread.

Every send that starts gets the whole `WEBHOOK_TIMEOUT_SECONDS` (10) for a 2xx, or it counts as a
failure. It must start within its request's delivery window: all rounds of one HTTP request share one,
`WEBHOOK_TIMEOUT_SECONDS` from the first round's start (outside a request, each round gets its own).
A delivery still waiting for a thread when that window closes is logged as failed, not sent, and not
counted against the endpoint (it never had its chance). So every delivery ends within two timeouts.
"""

from __future__ import annotations

import collections
import contextlib
import json
import logging
import os
import queue
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.core.cache import cache
from django.db import IntegrityError, connection, transaction
from django.db.models import F
from django.utils import timezone

from accounts.models import Organization
from core.errors import RateLimited
from core.sealing import SealedBlobError
from webhooks import transport
from webhooks.models import (
    FAILURES_BEFORE_FAILING,
    MAX_ENDPOINTS_PER_ORG,
    NO_OUTCOME,
    WebhookDelivery,
    WebhookEndpoint,
)
from webhooks.services import ActiveEndpoint, active_endpoints, endpoints_snapshot_refresh, org_row_lock, webhook_secret
from webhooks.signing import HEADER, signature_header
from webhooks.targets import TargetRefused, target_check
from webhooks.transport import Outcome

logger = logging.getLogger(__name__)

Endpoint = WebhookEndpoint | ActiveEndpoint  # a row (retry) or the organization row's snapshot (rounds)
# Lanes of one organization running at once in one process: a round to all of its endpoints runs at
# once, and its hanging endpoints hold no more threads than this.
ORG_LANES = MAX_ENDPOINTS_PER_ORG
# Lanes of one organization waiting for one of those: beyond this its deliveries are logged unsent.
ORG_WAITING = 1000
# The log writer closes its database connection after this long without work.
IDLE_CONNECTION_SECONDS = 60
_window = threading.local()  # the delivery deadline of the request this thread serves


def deliver_round(org: Organization, events: Sequence[tuple[str, dict]],
                  occurred_at: datetime) -> list[WebhookDelivery]:
    """Deliver `events` (kind, data) of `org` to its subscribed active endpoints; returns their log entries.

    Returns once the entries are written and the sends handed off; `deliveries_settle` waits for the rest.
    """
    kinds = {kind for kind, _ in events}
    endpoints = [endpoint for endpoint in active_endpoints(org) if kinds.intersection(endpoint.events)]
    if not endpoints:
        return []
    timestamp = occurred_at.isoformat().replace("+00:00", "Z")
    timeout = settings.WEBHOOK_TIMEOUT_SECONDS
    start_by = _round_deadline(timeout)
    allow_private = settings.WEBHOOK_ALLOW_PRIVATE_TARGETS
    entries, lanes = [], []
    for endpoint in endpoints:
        # Secrets are unsealed here, in the request's thread; lanes get only what they send.
        secret = _secret_or_none(endpoint)
        lane_entries, bodies = [], []
        for kind, data in events:
            if kind in endpoint.events:
                delivery_id = uuid.uuid4()
                bodies.append(_envelope(delivery_id, kind, timestamp, org.pk, data))
                lane_entries.append(_log_entry(endpoint, delivery_id, kind, bodies[-1],
                                               _UNREADABLE_SECRET if secret is None else None))
        entries += lane_entries
        if secret is not None:
            lanes.append(_Lane(endpoint, [entry.pk for entry in lane_entries], bodies, secret, start_by, timeout,
                               allow_private))
    stored = _store(entries)
    for lane in lanes:
        if lane.delivery_ids[0] in stored:  # an endpoint deleted meanwhile gets nothing
            _dispatcher().submit(org.pk, lane)
    return entries


def delivery_retry(delivery: WebhookDelivery) -> WebhookDelivery:
    """Send a logged delivery's payload again with a fresh signature; returns the new log entry.

    The organization's explicit request, answered with the outcome: sent from the request's thread,
    which waits for the endpoint's answer (up to the timeout). One retry of an organization runs at a
    time, across every process (a slot in the shared cache): otherwise an organization retrying against
    an endpoint that never answers could hold every worker. A second one meanwhile is 429 `rate_limited`
    with Retry-After. Allowed whatever the endpoint's status; the outcome counts toward the failure
    count only while the endpoint is active.
    """
    timeout = settings.WEBHOOK_TIMEOUT_SECONDS
    slot = f"webhooks:retry:{delivery.endpoint.org_id}"
    # The slot outlives a process that dies holding it by a little more than a send can take.
    if not cache.add(slot, os.getpid(), timeout=int(timeout) + 5):
        raise RateLimited("Another retry of this organization's deliveries is still waiting for its "
                          "endpoint's answer; retry once it has answered.",
                          headers={"Retry-After": str(int(timeout) + 1)})
    try:
        return _retry(delivery)
    finally:
        cache.delete(slot)


def _retry(delivery: WebhookDelivery) -> WebhookDelivery:
    endpoint = delivery.endpoint
    body = delivery.payload.encode()
    secret = _secret_or_none(endpoint)
    entry = _log_entry(endpoint, uuid.uuid4(), delivery.event, body,
                       _UNREADABLE_SECRET if secret is None else None, retry_of=delivery)
    _store([entry])
    if secret is not None:
        timeout = settings.WEBHOOK_TIMEOUT_SECONDS
        lane = _Lane(endpoint, [entry.pk], [body], secret, time.monotonic() + timeout, timeout,
                     settings.WEBHOOK_ALLOW_PRIVATE_TARGETS)
        [outcome] = lane.send()
        _settle([(lane.endpoint, lane.delivery_ids, [outcome])],
                counted=endpoint.status == WebhookEndpoint.Status.ACTIVE)
        _apply(entry, outcome)
    return entry


def deliveries_settle(timeout: float | None = None, *, release_connection: bool = False) -> bool:
    """Wait until every delivery this process handed off has its outcome written; False on timeout.

    For tests, benches and commands that want the log complete (a process leaving waits by itself);
    `release_connection` also has the log writer close its database connection (a test database is
    dropped at the end).
    """
    if _state.pid != os.getpid():
        return True
    settled = _state.dispatcher.settle(timeout)
    if release_connection:
        _state.dispatcher.release_connection()
    return settled


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


def _secret_or_none(endpoint: Endpoint) -> str | None:
    try:
        return webhook_secret(endpoint)
    except SealedBlobError:
        logger.error("the signing secret of webhook endpoint %s does not unseal (KEY_ENCRYPTION_KEY changed?)",
                     endpoint.id)
        return None


# The service's fault, not the endpoint's: never sent, never counted.
_UNREADABLE_SECRET = Outcome(None, "not sent: the endpoint's secret cannot be read", 0, attempted=False)


@dataclass
class _Lane:
    """One endpoint's deliveries of one round: network work only, no database."""

    endpoint: Endpoint
    delivery_ids: list[uuid.UUID]
    bodies: list[bytes]
    secret: str
    start_by: float
    timeout: float
    allow_private: bool

    def send(self) -> list[Outcome]:
        """The target checked again (and resolved once), then each body signed and sent in turn.

        A body must start by `start_by` (the request's delivery window: a lane that waited past it is
        not sent, and not counted); once sent it has the whole `timeout` to be answered.
        """
        if time.monotonic() >= self.start_by:
            return [_not_sent("the delivery window of its request had passed")] * len(self.bodies)
        try:
            target = target_check(self.endpoint.url, allow_private=self.allow_private)
        except TargetRefused as exc:
            return [Outcome(None, f"target refused: {exc}"[:300], 0)] * len(self.bodies)
        outcomes = []
        for body in self.bodies:
            started = time.monotonic()
            if started >= self.start_by:
                outcomes.append(_not_sent("the delivery window of its request had passed"))
                continue
            outcomes.append(transport.post(target, body=body, deadline=started + self.timeout,
                                           headers={HEADER: signature_header(secret=self.secret, body=body)}))
        return outcomes


def _not_sent(why: str) -> Outcome:
    return Outcome(None, f"not sent: {why}"[:300], 0, attempted=False)


class _Dispatcher:
    """This process's delivery threads, with a bound per organization, and its log writer.

    Lanes run on `threads` threads; at most `per_org` of one organization's at once, the others wait
    in that organization's queue (FIFO, at most `waiting`), run by the thread that frees up. Finished
    lanes go to the writer, which settles their log rows and failure counts in batches.
    """

    def __init__(self, threads: int, per_org: int, waiting: int):
        self._pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="webhook-lane")
        self._per_org, self._waiting_cap = per_org, waiting
        self._lock = threading.Condition()
        self._running: dict[uuid.UUID, int] = {}
        self._waiting: dict[uuid.UUID, collections.deque[_Lane]] = {}
        self._unsettled = 0  # lanes handed off whose rows the writer has not settled yet
        self._closing = False
        self._finished: queue.SimpleQueue = queue.SimpleQueue()
        self._writer = threading.Thread(target=self._write, name="webhook-log-writer")
        self._writer.start()

    def submit(self, org_id: uuid.UUID, lane: _Lane) -> None:
        with self._lock:
            self._unsettled += 1
            if self._closing:
                self._finished.put((lane, [_not_sent("the server process was stopping")] * len(lane.bodies)))
            elif self._running.get(org_id, 0) < self._per_org:
                self._running[org_id] = self._running.get(org_id, 0) + 1
                self._pool.submit(self._run, org_id, lane)
            elif len(waiting := self._waiting.setdefault(org_id, collections.deque())) < self._waiting_cap:
                waiting.append(lane)
            else:
                self._finished.put((lane, [_not_sent("too many of the organization's deliveries were waiting")]
                                    * len(lane.bodies)))

    def settle(self, timeout: float | None) -> bool:
        with self._lock:
            return self._lock.wait_for(lambda: self._unsettled == 0, timeout)

    def close(self) -> None:
        """The process is leaving: lanes in flight finish (by their deadlines), then the writer settles them."""
        with self._lock:
            self._closing = True
        self._pool.shutdown(wait=True)
        self._finished.put(None)
        self._writer.join()

    def _run(self, org_id: uuid.UUID, lane: _Lane | None) -> None:
        while lane is not None:
            try:
                outcomes = lane.send()
            except Exception:  # a bug must not lose the lane's rows or its thread
                logger.exception("webhook lane failed")
                outcomes = [Outcome(None, "delivery error", 0, attempted=False)] * len(lane.bodies)
            self._finished.put((lane, outcomes))
            with self._lock:
                waiting = self._waiting.get(org_id)
                lane = waiting.popleft() if waiting else None
                if waiting is not None and not waiting:
                    del self._waiting[org_id]
                if lane is None:
                    self._running[org_id] -= 1
                    if not self._running[org_id]:
                        del self._running[org_id]

    def release_connection(self) -> None:
        """Have the writer close its database connection now (it opens a new one when next needed)."""
        if self._writer.is_alive():
            released = threading.Event()
            self._finished.put(released)
            released.wait(timeout=60)

    def _write(self) -> None:
        stopping = False
        while not stopping:
            try:
                batch = [self._finished.get(timeout=IDLE_CONNECTION_SECONDS)]
            except queue.Empty:
                connection.close()  # idle: hold no connection for nothing, as CONN_MAX_AGE does for requests
                continue
            while len(batch) < 500:
                try:
                    batch.append(self._finished.get_nowait())
                except queue.Empty:
                    break
            stopping = None in batch
            released = [item for item in batch if isinstance(item, threading.Event)]
            batch = [item for item in batch if isinstance(item, tuple)]
            if batch:
                try:
                    _settle([(lane.endpoint, lane.delivery_ids, outcomes) for lane, outcomes in batch],
                            counted=True)
                except Exception:
                    # The rows keep saying that no outcome was recorded: true, if less than we knew.
                    logger.exception("webhook delivery outcomes could not be written")
                    connection.close()  # a new one next time (the database may have restarted)
                with self._lock:
                    self._unsettled -= len(batch)
                    self._lock.notify_all()
            if released:
                connection.close()
                for event in released:
                    event.set()
        connection.close()


class _State:
    dispatcher: _Dispatcher | None = None
    pid: int | None = None


_state = _State()
_state_lock = threading.Lock()


def _dispatcher() -> _Dispatcher:
    if _state.pid != os.getpid():  # made on first use: after a server forks its workers, one per process
        with _state_lock:
            if _state.pid != os.getpid():
                _state.dispatcher = _Dispatcher(settings.WEBHOOK_DELIVERY_THREADS, ORG_LANES, ORG_WAITING)
                _state.pid = os.getpid()
                # Before Python joins the remaining threads at exit (as concurrent.futures does): a
                # worker that stops gracefully finishes its deliveries and writes their outcomes.
                threading._register_atexit(_state.dispatcher.close)
    return _state.dispatcher


def _log_entry(endpoint: Endpoint, delivery_id: uuid.UUID, kind: str, body: bytes, outcome: Outcome | None,
               retry_of: WebhookDelivery | None = None) -> WebhookDelivery:
    """A log row; without an outcome, one written before sending that says so until it is settled."""
    entry = WebhookDelivery(id=delivery_id, org_id=endpoint.org_id, endpoint_id=endpoint.id, event=kind,
                            payload=body.decode(), status=WebhookDelivery.Status.FAILED, response_code=None,
                            latency_ms=0, error=NO_OUTCOME, pending=outcome is None, retry_of=retry_of,
                            created_at=timezone.now())
    if outcome is not None:
        _apply(entry, outcome)
    return entry


def _apply(entry: WebhookDelivery, outcome: Outcome) -> None:
    entry.status = WebhookDelivery.Status.SUCCESS if outcome.ok else WebhookDelivery.Status.FAILED
    entry.response_code, entry.latency_ms, entry.error, entry.pending = (outcome.status_code, outcome.latency_ms,
                                                                         outcome.error, False)


def _store(entries: list[WebhookDelivery]) -> set[uuid.UUID]:
    """Write log entries in their own transaction, committed without waiting for the disk on PostgreSQL;
    returns the ids written (an endpoint deleted meanwhile took its entries with it).

    An asynchronous commit is safe here: a database crash can at worst forget the last fraction of a
    second of log entries, never make a half-written one. It spares every delivering request a second
    wait for a WAL flush after the one its own action committed.
    """
    try:
        with _quick_transaction():
            WebhookDelivery.objects.bulk_create(entries)
        return {entry.pk for entry in entries}
    except IntegrityError:
        asked = {entry.endpoint_id for entry in entries}
        alive = set(WebhookEndpoint.objects.filter(pk__in=asked).values_list("pk", flat=True))
        kept = [entry for entry in entries if entry.endpoint_id in alive]
        WebhookDelivery.objects.bulk_create(kept)
        return {entry.pk for entry in kept}


@contextlib.contextmanager
def _quick_transaction() -> Iterator[None]:
    with transaction.atomic():
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SET LOCAL synchronous_commit TO OFF")
        yield


def _settle(finished: list[tuple[Endpoint, list[uuid.UUID], list[Outcome]]], *, counted: bool) -> None:
    """Write the outcomes of finished lanes into their rows, then count each endpoint's failures once.

    Only a row still pending is settled (`pending=True` in the filter), so an outcome is never written twice, and
    the count changes in the same transaction as the rows.
    """
    rows = []
    for _, delivery_ids, outcomes in finished:
        for delivery_id, outcome in zip(delivery_ids, outcomes, strict=True):
            status = WebhookDelivery.Status.SUCCESS if outcome.ok else WebhookDelivery.Status.FAILED
            rows.append((delivery_id, {"status": status, "response_code": outcome.status_code,
                                       "latency_ms": outcome.latency_ms, "error": outcome.error, "pending": False}))
    by_endpoint: dict[uuid.UUID, tuple[Endpoint, list[Outcome]]] = {}
    for endpoint, _, outcomes in finished:
        by_endpoint.setdefault(endpoint.id, (endpoint, []))[1].extend(outcomes)
    # One transaction: a row's outcome and its count are written together or not at all.
    with _quick_transaction():
        for delivery_id, outcome_fields in rows:
            WebhookDelivery.objects.filter(pk=delivery_id, pending=True).update(**outcome_fields)
        if counted:
            # Organization rows locked in one order by every writer: two processes' batches cannot deadlock.
            for endpoint, outcomes in sorted(by_endpoint.values(), key=lambda item: (str(item[0].org_id),
                                                                                     str(item[0].id))):
                _count(endpoint, outcomes)


def _count(endpoint: Endpoint, outcomes: list[Outcome]) -> None:
    """Consecutive failures (spec, States): any 2xx resets the count; the fifth failure in a row sets `failing`.

    A healthy endpoint that stays healthy writes nothing; any change of the count is written with the
    organization's snapshot of its endpoints, so the next round knows it without a query. Runs inside
    the transaction that settles the outcomes' rows.
    """
    attempted = [outcome for outcome in outcomes if outcome.attempted]
    if not attempted:
        return
    last_success = max((i for i, outcome in enumerate(attempted) if outcome.ok), default=None)
    failures_since = len(attempted) if last_success is None else len(attempted) - 1 - last_success
    if last_success is not None and failures_since == 0 and endpoint.consecutive_failures == 0:
        return
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
