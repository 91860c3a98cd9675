"""Webhook endpoints (where an organization's events go, signed with the endpoint's secret) and the
delivery log (every attempt, kept 30 days)."""

import uuid

from django.db import models
from django.utils import timezone

from accounts.models import Organization, OrgScopedQuerySet

MAX_ENDPOINTS_PER_ORG = 10  # spec, Limits
FAILURES_BEFORE_FAILING = 5  # spec, Limits: consecutive failures, then `failing`
DELIVERY_LOG_DAYS = 30  # spec, Events rule 7
# What a delivery's row says from before it is sent until its outcome is written over it: all that
# remains if the process sending it dies in between (webhooks/delivery.py).
NO_OUTCOME = "no outcome recorded: the server process sending it stopped before it finished"


class WebhookEndpoint(models.Model):
    class Status(models.TextChoices):
        ACTIVE = "active"
        DISABLED = "disabled"  # by the organization (PATCH)
        FAILING = "failing"  # by the service after 5 consecutive failed deliveries

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    org = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="webhook_endpoints")
    url = models.CharField(max_length=2048)
    events = models.JSONField(default=list)  # subscribed kinds of webhooks.events.EVENT_KINDS, in that order
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.ACTIVE)
    consecutive_failures = models.PositiveIntegerField(default=0)
    # The signing secret sealed with AES-256-GCM (webhooks/services.py): deliveries need it back, so it
    # cannot be a hash like API keys; it is shown once, at creation.
    encrypted_secret = models.BinaryField(editable=False)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    objects = OrgScopedQuerySet.as_manager()

    class Meta:
        ordering = ["created_at", "id"]
        indexes = [models.Index(fields=["org", "created_at"], name="webhook_org_oldest")]

    def __str__(self) -> str:
        return f"{self.url} ({self.status})"


class WebhookDelivery(models.Model):
    """One attempt to deliver one event to one endpoint (a retry is a new row)."""

    class Status(models.TextChoices):
        SUCCESS = "success"  # the endpoint answered 2xx in time
        FAILED = "failed"  # any other status, a timeout, a refused target or a connection error

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    org = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="+")
    endpoint = models.ForeignKey(WebhookEndpoint, on_delete=models.CASCADE, related_name="deliveries")
    event = models.CharField(max_length=40)
    # The request body exactly as sent (its `id` is the first attempt's delivery id, so a receiver
    # deduplicates a retry): a retry re-sends these bytes with a fresh signature.
    payload = models.TextField()
    status = models.CharField(max_length=10, choices=Status.choices)
    response_code = models.PositiveSmallIntegerField(null=True, blank=True)
    latency_ms = models.PositiveIntegerField(default=0)
    error = models.CharField(max_length=300, blank=True)  # why it failed without a response code
    # Written before sending, cleared with the outcome. A row still pending past its delivery window
    # belongs to a process that died mid-delivery: it stays `failed` with NO_OUTCOME, never counted.
    pending = models.BooleanField(default=False)
    retry_of = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(default=timezone.now)

    objects = OrgScopedQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["endpoint", "-created_at"], name="delivery_endpoint_newest"),
                   models.Index(fields=["created_at"], name="delivery_created")]

    def __str__(self) -> str:
        return f"{self.event} -> {self.endpoint_id}: {self.status}"
