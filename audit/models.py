import uuid

from django.db import models
from django.utils import timezone

from accounts.models import Organization, OrgScopedQuerySet


class AuditEvent(models.Model):
    class Type(models.TextChoices):
        SIGN = "sign"
        VERIFY = "verify"
        KEY_CREATED = "key_created"
        KEY_REVOKED = "key_revoked"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    org = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="audit_events")
    type = models.CharField(max_length=20, choices=Type.choices)
    timestamp = models.DateTimeField(default=timezone.now)
    metadata = models.JSONField(default=dict)

    objects = OrgScopedQuerySet.as_manager()

    class Meta:
        ordering = ["-timestamp", "-id"]
        indexes = [models.Index(fields=["org", "-timestamp"], name="audit_org_newest")]

    def __str__(self) -> str:
        return f"{self.type} at {self.timestamp:%Y-%m-%d %H:%M:%S}"
