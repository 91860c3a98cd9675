"""The one call every webhook-worthy state change makes: `event_emit` (or `events_emit` for several).

Callers emit inside the transaction of the change. Delivery runs once that transaction commits (an
event of a rolled-back change is never sent), still within the request (spec, Events rule 1), and
only for kinds an active endpoint of the organization subscribes to: the organization row every
request already holds lists its active endpoints (`Organization.active_webhooks`), so an event
nobody listens to costs nothing and one that somebody does costs no query to route. All events of
one `events_emit` call go out in one delivery round, concurrently.
"""

import functools
import logging
from collections.abc import Callable, Sequence

from django.db import transaction
from django.utils import timezone

from accounts.models import Organization
from accounts.plans import plan_allows

logger = logging.getLogger(__name__)

Listener = Callable[[Organization, str, dict], None]
_listeners: list[Listener] = []

EVENT_KINDS = (
    "record.created",
    "verify.attempted",
    "verify.tamper_detected",
    "quota.warning",
    "quota.limit",
    "generator.revoked",
    "generator.key_rotated",
    "job.completed",
)


def event_emit(*, org: Organization, kind: str, data: dict) -> None:
    """Announce an event of `kind` for `org`. ValueError for a kind the spec does not list."""
    events_emit(org=org, events=[(kind, data)])


def events_emit(*, org: Organization, events: Sequence[tuple[str, dict]]) -> None:
    """Announce several events of `org` at once: one delivery round after commit. ValueError as above."""
    for kind, _ in events:
        if kind not in EVENT_KINDS:
            raise ValueError(f"unknown event kind {kind!r}")
    for kind, data in events:
        logger.debug("event %s for org %s: %s", kind, org.pk, data)
        for listener in tuple(_listeners):
            listener(org, kind, data)
    endpoints = org.active_webhooks
    if not endpoints or not plan_allows(org.plan, "webhooks"):
        return  # nobody listens (or the plan no longer delivers): no query, no work
    subscribed = {kind for endpoint in endpoints for kind in endpoint["events"]}
    wanted = [(kind, data) for kind, data in events if kind in subscribed]
    if wanted:
        from webhooks.delivery import deliver_round  # delivery needs models; this module stays importable early

        # robust: a delivery problem is logged, never turned into an error of the committed action.
        transaction.on_commit(functools.partial(deliver_round, org, wanted, timezone.now()), robust=True)


def event_listen(listener: Listener) -> Callable[[], None]:
    """Call `listener(org, kind, data)` for every event emitted from now on; returns the unsubscriber.

    The one seam every emitter passes through, whatever module it is called from (tests capture here).
    """
    _listeners.append(listener)
    return lambda: _listeners.remove(listener)
