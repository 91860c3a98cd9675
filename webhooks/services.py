"""Creating, changing and deleting webhook endpoints: one transaction each."""

import base64
import secrets
import uuid
from dataclasses import dataclass

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from accounts.models import Organization
from accounts.services import organization_webhooks_set
from audit.services import audit_write
from core.errors import NotFound, ValidationFailed
from core.keyring import webhook_secret_sealing_ring
from core.sealing import seal, sealed_key_id, unseal
from webhooks.events import EVENT_KINDS
from webhooks.models import MAX_ENDPOINTS_PER_ORG, WebhookEndpoint
from webhooks.targets import Target, TargetRefused, target_check

SECRET_PREFIX = "whsec_"


@dataclass(frozen=True)
class CreatedWebhook:
    endpoint: WebhookEndpoint
    secret: str  # the only time the plaintext leaves the service


def webhook_create(*, org: Organization, url: str, events: list[str]) -> CreatedWebhook:
    """A new active endpoint with a fresh secret; writes audit `webhook.created`.

    Raises ValidationFailed (url, events, more than 10 per organization).
    """
    kinds = _valid_events(events)
    webhook_target(url)
    secret = SECRET_PREFIX + secrets.token_urlsafe(32)
    with transaction.atomic():
        org_row_lock(org.pk)  # so two concurrent creates cannot both pass the cap
        if WebhookEndpoint.objects.for_org(org).count() >= MAX_ENDPOINTS_PER_ORG:
            raise ValidationFailed(f"An organization may have at most {MAX_ENDPOINTS_PER_ORG} webhook endpoints.")
        endpoint_id = uuid.uuid4()
        endpoint = WebhookEndpoint.objects.create(id=endpoint_id, org=org, url=url, events=kinds,
                                                  encrypted_secret=_seal(endpoint_id, secret.encode()))
        endpoints_snapshot_refresh(org.pk)
        audit_write(org=org, type="webhook.created",
                    metadata={"webhook_id": str(endpoint_id), "url": url, "events": kinds})
    return CreatedWebhook(endpoint=endpoint, secret=secret)


def webhook_update(*, endpoint: WebhookEndpoint, url: str | None = None, events: list[str] | None = None,
                   status: str | None = None) -> WebhookEndpoint:
    """Change url, events and/or status (`active` or `disabled`); reactivating resets the failure count.

    Writes audit `webhook.updated` with the fields sent.

    Raises ValidationFailed, NotFound (deleted meanwhile).
    """
    kinds = None if events is None else _valid_events(events)
    if url is not None:
        webhook_target(url)
    with transaction.atomic():
        org_row_lock(endpoint.org_id)  # always the organization row first, then the endpoint: one lock order
        locked = WebhookEndpoint.objects.select_for_update().filter(pk=endpoint.pk).first()
        if locked is None:
            raise NotFound()
        if url is not None:
            locked.url = url
        if kinds is not None:
            locked.events = kinds
        if status is not None:
            _move_status(locked, status)
        locked.updated_at = timezone.now()
        locked.save()
        endpoints_snapshot_refresh(locked.org_id)
        changes = {name: value for name, value in (("url", url), ("events", kinds), ("status", status))
                   if value is not None}
        audit_write(org=locked.org, type="webhook.updated", metadata={"webhook_id": str(locked.pk), **changes})
    return locked


def webhook_delete(*, endpoint: WebhookEndpoint) -> None:
    """Delete the endpoint; nothing more is delivered to it. Writes audit `webhook.deleted`."""
    with transaction.atomic():
        org_row_lock(endpoint.org_id)
        deleted, _ = WebhookEndpoint.objects.filter(pk=endpoint.pk).delete()
        if deleted:
            endpoints_snapshot_refresh(endpoint.org_id)
            audit_write(org=endpoint.org, type="webhook.deleted",
                        metadata={"webhook_id": str(endpoint.pk), "url": endpoint.url})


@dataclass(frozen=True)
class ActiveEndpoint:
    """An active endpoint as `Organization.active_webhooks` holds it: what a delivery round needs."""

    id: uuid.UUID
    org_id: uuid.UUID
    url: str
    events: tuple[str, ...]
    consecutive_failures: int
    encrypted_secret: bytes


def active_endpoints(org: Organization) -> list[ActiveEndpoint]:
    """The organization's active endpoints, from the row it was loaded with (no query)."""
    return [ActiveEndpoint(id=uuid.UUID(entry["id"]), org_id=org.pk, url=entry["url"], events=tuple(entry["events"]),
                           consecutive_failures=entry["failures"], encrypted_secret=base64.b64decode(entry["secret"]))
            for entry in org.active_webhooks]


def endpoints_snapshot_refresh(org_id: uuid.UUID) -> None:
    """Rewrite `Organization.active_webhooks` from the endpoint rows.

    Call inside the transaction of the endpoint change, with the organization row locked.
    """
    snapshot = [{"id": str(endpoint.pk), "url": endpoint.url, "events": endpoint.events,
                 "failures": endpoint.consecutive_failures,
                 "secret": base64.b64encode(bytes(endpoint.encrypted_secret)).decode()}
                for endpoint in WebhookEndpoint.objects.filter(org_id=org_id, status=WebhookEndpoint.Status.ACTIVE)]
    organization_webhooks_set(org_id=org_id, endpoints=snapshot)


def webhook_secret(endpoint: WebhookEndpoint | ActiveEndpoint) -> str:
    """The endpoint's signing secret, decrypted (for signing deliveries; never stored or logged)."""
    return unseal(bytes(endpoint.encrypted_secret), webhook_secret_sealing_ring().keys,
                  associated_data=_sealing_context(endpoint.id)).decode()


def webhook_secret_reseal(*, endpoint_id: uuid.UUID) -> bool:
    """Seal one endpoint's signing secret again under the newest KEY_ENCRYPTION_KEY id, and the
    organization's snapshot of its active endpoints with it.

    One short transaction: the organization's row, then the endpoint's (the order every endpoint change
    takes). Returns False when there was nothing to do (already under the newest id, or no such
    endpoint). Raises SealedBlobError (UnknownKeyId among them) when the blob does not unseal.
    """
    ring = webhook_secret_sealing_ring()
    with transaction.atomic():
        org_id = WebhookEndpoint.objects.filter(pk=endpoint_id).values_list("org_id", flat=True).first()
        if org_id is None:
            return False
        org_row_lock(org_id)
        endpoint = WebhookEndpoint.objects.select_for_update().filter(pk=endpoint_id).first()
        if endpoint is None or sealed_key_id(endpoint.encrypted_secret) == ring.newest_id:
            return False
        secret = unseal(bytes(endpoint.encrypted_secret), ring.keys, associated_data=_sealing_context(endpoint.pk))
        WebhookEndpoint.objects.filter(pk=endpoint.pk).update(encrypted_secret=_seal(endpoint.pk, secret))
        endpoints_snapshot_refresh(org_id)
    return True


def webhook_target(url: str) -> Target:
    """The checked target of `url` (addendum 7). Raises ValidationFailed naming `url`."""
    try:
        return target_check(url, allow_private=settings.WEBHOOK_ALLOW_PRIVATE_TARGETS)
    except TargetRefused as exc:
        raise ValidationFailed(details={"url": [str(exc)]}) from None


def org_row_lock(org_id: uuid.UUID) -> None:
    """Lock the organization's row until the transaction ends: taken before any endpoint row, always."""
    Organization.objects.select_for_update().filter(pk=org_id).values_list("pk", flat=True).first()


def _move_status(endpoint: WebhookEndpoint, status: str) -> None:
    # Only the organization's two states can be asked for; `failing` is the service's to set.
    if status not in (WebhookEndpoint.Status.ACTIVE, WebhookEndpoint.Status.DISABLED):
        raise ValidationFailed(details={"status": ["Choose active or disabled."]})
    if status == WebhookEndpoint.Status.ACTIVE and endpoint.status != WebhookEndpoint.Status.ACTIVE:
        endpoint.consecutive_failures = 0  # spec, States: reactivation resets the counter
    endpoint.status = status


def _valid_events(events: list[str]) -> list[str]:
    unknown = sorted(set(events) - set(EVENT_KINDS))
    if unknown or not events:
        raise ValidationFailed(details={"events": [f"Choose one or more of {', '.join(EVENT_KINDS)}."]})
    return [kind for kind in EVENT_KINDS if kind in events]


def _seal(endpoint_id: uuid.UUID, secret: bytes) -> bytes:
    ring = webhook_secret_sealing_ring()
    return seal(secret, ring.newest_key, key_id=ring.newest_id, associated_data=_sealing_context(endpoint_id))


def _sealing_context(endpoint_id: uuid.UUID) -> bytes:
    # Binds a sealed secret to its row: a blob copied to another endpoint will not decrypt.
    return f"webhook-secret:{endpoint_id}".encode()
