import uuid

from django.db import models
from django.utils import timezone

from accounts import security_events
from accounts.models import Organization, OrgScopedQuerySet


class AuditEvent(models.Model):
    class Type(models.TextChoices):
        SIGN = "sign"
        VERIFY = "verify"
        KEY_CREATED = "key_created"
        KEY_REVOKED = "key_revoked"
        # Team changes; metadata carries `actor_id`, the user who made the change.
        TEAM_INVITE_SENT = "team.invite_sent"
        TEAM_INVITE_ACCEPTED = "team.invite_accepted"
        TEAM_INVITE_CANCELLED = "team.invite_cancelled"
        TEAM_ROLE_CHANGED = "team.role_changed"
        TEAM_MEMBER_REMOVED = "team.member_removed"
        # Webhook endpoint changes; metadata carries `webhook_id` (never the secret).
        WEBHOOK_CREATED = "webhook.created"
        WEBHOOK_UPDATED = "webhook.updated"
        WEBHOOK_DELETED = "webhook.deleted"
        # Staff changed the plan (admin or `set_plan`); metadata: plan, billing_interval, the previous
        # ones and `actor`.
        PLAN_CHANGED = "billing.plan_changed"
        # A member's own sign-in security (accounts/security_events.py); metadata carries `actor_id` (the
        # member) and never a code.
        TWO_FACTOR_ENABLED = security_events.TWO_FACTOR_ENABLED
        TWO_FACTOR_DISABLED = security_events.TWO_FACTOR_DISABLED
        RECOVERY_CODES_REGENERATED = security_events.RECOVERY_CODES_REGENERATED
        RECOVERY_CODE_USED = security_events.RECOVERY_CODE_USED
        PASSWORD_CHANGED = security_events.PASSWORD_CHANGED
        # A generator's own C2PA signing certificate; metadata: `generator_id` and the leaf's subject,
        # serial and SHA-256 fingerprint (never the key).
        C2PA_CERTIFICATE_UPLOADED = "generator.c2pa_certificate_uploaded"
        C2PA_CERTIFICATE_REMOVED = "generator.c2pa_certificate_removed"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    org = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="audit_events")
    type = models.CharField(max_length=40, choices=Type.choices)
    timestamp = models.DateTimeField(default=timezone.now)
    metadata = models.JSONField(default=dict)

    objects = OrgScopedQuerySet.as_manager()

    class Meta:
        ordering = ["-timestamp", "-id"]
        # The type rides along (PostgreSQL; migration 0007): counting one type over a period reads the index alone.
        indexes = [models.Index(fields=["org", "-timestamp"], include=["type"], name="audit_org_newest")]

    def __str__(self) -> str:
        return f"{self.type} at {self.timestamp:%Y-%m-%d %H:%M:%S}"
