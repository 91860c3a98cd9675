"""Provenance records: what was signed, by which generator key, and how to find it again."""

import uuid

from django.db import models
from django.utils import timezone

from accounts.models import Organization, OrgScopedQuerySet
from generators.models import Generator, GeneratorKey
from provenance.payload import SIGNED_FIELDS


class FingerprintKind(models.TextChoices):
    """What a record's near-match fingerprint is; values of different kinds are never compared."""

    IMAGE_PHASH = "image-phash", "image pHash (64-bit DCT, as imagehash.phash)"
    VIDEO_PHASH = "video-phash", "video pHash (64-bit DCT of the first I-frame)"


FINGERPRINT_FIELDS = ("phash", "fingerprint_kind", "phash_value", "phash_band0", "phash_band1", "phash_band2",
                      "phash_band3")


def _all_or_none_set(fields: tuple[str, ...]) -> models.Q:
    return models.Q(**{f"{field}__isnull": True for field in fields}) | models.Q(
        **{f"{field}__isnull": False for field in fields})


class Record(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    org = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="records")
    generator = models.ForeignKey(Generator, on_delete=models.CASCADE, related_name="records")
    key = models.ForeignKey(GeneratorKey, on_delete=models.CASCADE, related_name="records")
    model = models.CharField(max_length=200)
    watermark_id = models.CharField(max_length=128, db_index=True)
    content_hash = models.CharField(max_length=73, db_index=True)  # "sha3-256:" + 64 hex
    # The near-match fingerprint: 16 hex digits (`phash`, as the API shows it) and what kind of
    # fingerprint they are. Lookups compare only values of the same kind.
    phash = models.CharField(max_length=16, null=True, blank=True)
    fingerprint_kind = models.CharField(max_length=32, choices=FingerprintKind.choices, null=True, blank=True)
    # The same 64 bits as a signed BIGINT (two's complement), so PostgreSQL computes the Hamming
    # distance itself: bit_count((phash_value # probe)::bit(64)).
    phash_value = models.BigIntegerField(null=True, blank=True)
    # ... and in four 16-bit bands: near matches are found by multi-index hashing (a close hash agrees
    # with some band to within one bit), through the (kind, band) indexes, never by scanning records.
    phash_band0 = models.IntegerField(null=True, blank=True)
    phash_band1 = models.IntegerField(null=True, blank=True)
    phash_band2 = models.IntegerField(null=True, blank=True)
    phash_band3 = models.IntegerField(null=True, blank=True)
    signature = models.BinaryField()
    format = models.CharField(max_length=10, null=True, blank=True)  # set by server-managed signing
    signed_at = models.DateTimeField(default=timezone.now)

    objects = OrgScopedQuerySet.as_manager()

    class Meta:
        ordering = ["-signed_at"]
        indexes = [
            # Exact matches, newest first, and the tie-break among a distance's records.
            models.Index(fields=["fingerprint_kind", "phash_value", "-signed_at"], name="record_fingerprint_exact"),
            *(models.Index(fields=["fingerprint_kind", f"phash_band{band}"], include=["phash_value"],
                           name=f"record_fingerprint_band{band}") for band in range(4)),
        ]
        constraints = [
            models.CheckConstraint(condition=_all_or_none_set(FINGERPRINT_FIELDS), name="record_fingerprint_complete"),
        ]

    def __str__(self) -> str:
        return f"record {self.pk}"

    @property
    def signed_payload(self) -> dict:
        """The object the signature covers (spec: Signed payload), rebuilt from the stored fields."""
        return {field: str(getattr(self, field)) for field in SIGNED_FIELDS}
