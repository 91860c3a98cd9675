"""What the dashboard keeps between requests: a signed file, until its signer downloads it."""

import uuid

from django.conf import settings
from django.db import models
from django.utils import timezone

from accounts.models import Organization, OrgScopedQuerySet


class SignedFileQuerySet(OrgScopedQuerySet):
    def unexpired(self) -> "SignedFileQuerySet":
        return self.filter(expires_at__gt=timezone.now())


class SignedFile(models.Model):
    """A file signed on the dashboard's sign page, kept for its download link (an hour; then
    `manage.py purge_expired` deletes it). In the database, not a process's memory or disk, so any app
    process answers the download. Only the member who signed it may download it."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    org = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="+")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    record = models.ForeignKey("provenance.Record", on_delete=models.CASCADE, related_name="+")
    token = models.CharField(max_length=256)
    filename = models.CharField(max_length=255)
    mime_type = models.CharField(max_length=100)
    size = models.PositiveBigIntegerField()
    data = models.BinaryField()
    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField(db_index=True)

    objects = SignedFileQuerySet.as_manager()

    def __str__(self) -> str:
        return f"{self.filename} ({self.size} bytes, record {self.record_id})"
