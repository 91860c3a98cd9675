"""Webhook endpoints: where an organization's events are delivered, signed with the endpoint's secret."""

import uuid

from django.db import models
from django.utils import timezone

from accounts.models import Organization, OrgScopedQuerySet

MAX_ENDPOINTS_PER_ORG = 10  # spec, Limits
FAILURES_BEFORE_FAILING = 5  # spec, Limits: consecutive failures, then `failing`


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
