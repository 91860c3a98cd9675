"""Reads of an organization's webhook endpoints and their delivery log (kept 30 days)."""

import uuid
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Q, QuerySet
from django.utils import timezone

from accounts.models import Organization
from core.errors import NotFound
from core.paging import Page, page_of
from webhooks.models import DELIVERY_LOG_DAYS, WebhookDelivery, WebhookEndpoint


def webhook_list(*, org: Organization) -> list[WebhookEndpoint]:
    """The organization's endpoints, oldest first (at most MAX_ENDPOINTS_PER_ORG)."""
    return list(WebhookEndpoint.objects.for_org(org))


def webhook_get(*, org: Organization, webhook_id: uuid.UUID) -> WebhookEndpoint:
    """One of the organization's endpoints. Raises NotFound (also for another organization's)."""
    endpoint = WebhookEndpoint.objects.for_org(org).filter(pk=webhook_id).first()
    if endpoint is None:
        raise NotFound("Webhook endpoint not found.")
    return endpoint


def delivery_page(*, endpoint: WebhookEndpoint, number: int, per_page: int) -> Page:
    """One page of an endpoint's delivery log, newest first, within the log's 30 days."""
    entries = _known(endpoint.deliveries.filter(created_at__gte=log_kept_since()))
    return page_of(entries, number=number, per_page=per_page)


def delivery_for_retry(*, org: Organization, endpoint: WebhookEndpoint, delivery_id: uuid.UUID) -> WebhookDelivery:
    """A logged delivery of the organization's `endpoint`, ready to re-send. Raises NotFound."""
    delivery = _known(WebhookDelivery.objects.for_org(org).filter(
        endpoint=endpoint, pk=delivery_id, created_at__gte=log_kept_since())).first()
    if delivery is None:
        raise NotFound()
    delivery.endpoint = endpoint
    return delivery


def log_kept_since() -> datetime:
    # Older entries are past the log's 30 days (spec, Events rule 7) and wait only for the prune command.
    return timezone.now() - timedelta(days=DELIVERY_LOG_DAYS)


# How long past its delivery window a row may wait for its outcome to be written (a busy writer).
SETTLE_GRACE_SECONDS = 30


def _known(entries: QuerySet) -> QuerySet:
    """Entries whose outcome is known: settled, or pending so long that their process must have died
    (shown as the row says: `failed`, no response code, no outcome recorded). A delivery still in
    flight is not shown yet: the log lists what happened, not what may still happen."""
    abandoned_before = timezone.now() - timedelta(seconds=settings.WEBHOOK_TIMEOUT_SECONDS + SETTLE_GRACE_SECONDS)
    return entries.filter(Q(pending=False) | Q(created_at__lt=abandoned_before))
