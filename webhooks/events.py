"""The one call every webhook-worthy state change makes: `event_emit`.

Delivery (signed HTTP POSTs to subscribed endpoints) arrives with the webhooks issue; this is the
seam it plugs into. Callers emit inside their transaction; delivery will run on commit.
"""

import logging
from collections.abc import Callable

from accounts.models import Organization

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
)


def event_emit(*, org: Organization, kind: str, data: dict) -> None:
    """Announce an event of `kind` for `org`. ValueError for a kind the spec does not list."""
    if kind not in EVENT_KINDS:
        raise ValueError(f"unknown event kind {kind!r}")
    logger.debug("event %s for org %s: %s", kind, org.pk, data)
    for listener in tuple(_listeners):
        listener(org, kind, data)


def event_listen(listener: Listener) -> Callable[[], None]:
    """Call `listener(org, kind, data)` for every event emitted from now on; returns the unsubscriber.

    The one seam every emitter passes through, whatever module it is called from (tests capture here).
    """
    _listeners.append(listener)
    return lambda: _listeners.remove(listener)
