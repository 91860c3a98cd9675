"""The one call every webhook-worthy state change makes: `event_emit`.

Delivery (signed HTTP POSTs to subscribed endpoints) arrives with the webhooks issue; this is the
seam it plugs into. Callers emit inside their transaction; delivery will run on commit.
"""

import logging

from accounts.models import Organization

logger = logging.getLogger(__name__)

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
