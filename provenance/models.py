"""Provenance records: what was signed, by which generator key, and how to find it again."""

import uuid

from django.db import models
from django.utils import timezone

from accounts.models import Organization, OrgScopedQuerySet
from generators.models import Generator, GeneratorKey


class Record(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    org = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="records")
    generator = models.ForeignKey(Generator, on_delete=models.CASCADE, related_name="records")
    key = models.ForeignKey(GeneratorKey, on_delete=models.CASCADE, related_name="records")
    model = models.CharField(max_length=200)
    watermark_id = models.CharField(max_length=128, db_index=True)
    content_hash = models.CharField(max_length=73, db_index=True)  # "sha3-256:" + 64 hex
    phash = models.CharField(max_length=16, null=True, blank=True)
    # The 64-bit pHash in four 16-bit bands, each indexed: near matches are found by multi-index
    # hashing (a close hash agrees exactly with at least one band), never by scanning records.
    phash_band0 = models.IntegerField(null=True, blank=True, db_index=True)
    phash_band1 = models.IntegerField(null=True, blank=True, db_index=True)
    phash_band2 = models.IntegerField(null=True, blank=True, db_index=True)
    phash_band3 = models.IntegerField(null=True, blank=True, db_index=True)
    signature = models.BinaryField()
    format = models.CharField(max_length=10, null=True, blank=True)  # set by server-managed signing
    signed_at = models.DateTimeField(default=timezone.now)

    objects = OrgScopedQuerySet.as_manager()

    class Meta:
        ordering = ["-signed_at"]

    def __str__(self) -> str:
        return f"record {self.pk}"

    @property
    def signed_payload(self) -> dict:
        """The object the signature covers (spec: Signed payload), rebuilt from the stored fields."""
        return {"content_hash": self.content_hash, "generator_id": str(self.generator_id), "model": self.model,
                "watermark_id": self.watermark_id}
