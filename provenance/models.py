"""Provenance records: what was signed, by which generator key, and how to find it again."""

import uuid

from django.db import models
from django.utils import timezone

from accounts.models import Organization, OrgScopedQuerySet
from generators.models import Generator, GeneratorKey
from record_format.payload import SIGNED_FIELDS


class FingerprintKind(models.TextChoices):
    """What a record's near-match fingerprint is; values of different kinds are never compared."""

    IMAGE_PHASH = "image-phash", "image pHash (64-bit DCT, as imagehash.phash)"
    VIDEO_PHASH = "video-phash", "video pHash (64-bit DCT of the first I-frame)"


FINGERPRINT_FIELDS = ("phash", "fingerprint_kind", "phash_value")


def _all_or_none_set(fields: tuple[str, ...]) -> models.Q:
    return models.Q(**{f"{field}__isnull": True for field in fields}) | models.Q(
        **{f"{field}__isnull": False for field in fields})


# The signed `watermark_id` of content whose format carries no watermark (video: a fingerprint only).
NO_WATERMARK = "none"


class Record(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    # Indexed by record_org_newest below (organization first), which also serves the foreign key.
    org = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="records", db_index=False)
    # Indexed by record_generator_newest below (generator first), which also serves the foreign key.
    generator = models.ForeignKey(Generator, on_delete=models.CASCADE, related_name="records", db_index=False)
    key = models.ForeignKey(GeneratorKey, on_delete=models.CASCADE, related_name="records")
    model = models.CharField(max_length=200)
    watermark_id = models.CharField(max_length=128)  # indexed by record_watermark_id (Meta)
    content_hash = models.CharField(max_length=73)  # "sha3-256:" + 64 hex; indexed with signed_at (Meta)
    # The near-match fingerprint: 16 hex digits (`phash`, as the API shows it) and what kind of
    # fingerprint they are. Lookups compare only values of the same kind.
    phash = models.CharField(max_length=16, null=True, blank=True)
    fingerprint_kind = models.CharField(max_length=32, choices=FingerprintKind.choices, null=True, blank=True)
    # The same 64 bits as a signed BIGINT (two's complement), so PostgreSQL computes the Hamming
    # distance itself: bit_count((phash_value # probe)::bit(64)).
    # Near matches search the distinct values (Fingerprint, filled by a trigger on insert), then come
    # back here through the exact index.
    phash_value = models.BigIntegerField(null=True, blank=True)
    signature = models.BinaryField()
    # An RFC 3161 TimeStampToken (DER) over the signature bytes from settings.TSA_URL's authority; None when
    # no authority is configured (or for records signed before one was).
    signature_timestamp = models.BinaryField(null=True, blank=True, editable=False)
    format = models.CharField(max_length=10, null=True, blank=True)  # set by server-managed signing
    # What the watermark reader finds in the record's own file, the one its content hash describes: a mark
    # (true) or none (false); null until a verification has read that file (formats with `hash_covers_mark`).
    # Later verifications of the unchanged file report it instead of reading the same pixels again
    # (docs/decisions.md, "Verify's cost").
    mark_in_file = models.BooleanField(null=True, editable=False)
    signed_at = models.DateTimeField(default=timezone.now)
    # The Disclosure flags (provenance/disclosures.py) the signed file carried; null: not recorded (no path
    # stores that today; docs/decisions.md, "Disclosures per record").
    disclosures = models.SmallIntegerField(null=True, blank=True, editable=False)
    # The record's index in the transparency log, set by the sequencer (transparency/services.py) in the
    # transaction that adds it to the tree; null until then. Record creation never touches it.
    log_index = models.BigIntegerField(null=True, blank=True, editable=False)

    objects = OrgScopedQuerySet.as_manager()

    class Meta:
        ordering = ["-signed_at"]
        indexes = [
            # The dashboard's record list and signatures-per-day chart: one organization, newest first. It
            # carries format and disclosures (PostgreSQL; migration 0014) for the compliance report's GROUP BY.
            models.Index(fields=["org", "-signed_at"], include=["format", "disclosures"], name="record_org_newest"),
            # GET /v1/records filtered by generator, model or format, newest first, without a sort: a
            # filter matching few of an organization's many records reads only those, and its count is
            # an index-only scan. The organization is in each (the generator's too: PostgreSQL's generic
            # plan for a prepared statement otherwise preferred another index, docs/performance.md,
            # "Figures behind code comments").
            models.Index(fields=["generator", "org", "-signed_at"], name="record_generator_newest"),
            models.Index(fields=["org", "model", "-signed_at"], name="record_org_model_newest"),
            models.Index(fields=["org", "format", "-signed_at"], name="record_org_format_newest"),
            # Verification's watermark lookup: equality only. A plain index: db_index=True also built a
            # varchar_pattern_ops copy for LIKE, which no query makes and every insert paid for (a random
            # page of a second large index; docs/performance.md, "Growth to 10^7 records").
            models.Index(fields=["watermark_id"], name="record_watermark_id"),
            # Verification's exact-hash lookup: the earliest record of a content hash, one index row however
            # many records share it. Also every equality lookup on content_hash (the admin's search).
            models.Index(fields=["content_hash", "signed_at", "id"], name="record_content_hash_earliest"),
            # Exact matches, newest first, and the tie-break among a distance's records.
            models.Index(fields=["fingerprint_kind", "phash_value", "-signed_at"], name="record_fingerprint_exact"),
            # The sequencer's queue: only records not yet in the log, in the order it takes them, so
            # finding them costs the same with a million records integrated as with none.
            models.Index(fields=["signed_at", "id"], condition=models.Q(log_index__isnull=True),
                         name="record_log_pending"),
        ]
        constraints = [
            models.CheckConstraint(condition=_all_or_none_set(FINGERPRINT_FIELDS), name="record_fingerprint_complete"),
            # One record per index; partial, so a new record (null) adds no entry to this index.
            models.UniqueConstraint(fields=["log_index"], condition=models.Q(log_index__isnull=False),
                                    name="record_log_index_unique"),
        ]

    def __str__(self) -> str:
        return f"record {self.pk}"

    @property
    def signed_payload(self) -> dict:
        """The object the signature covers (spec: Signed payload), rebuilt from the stored fields."""
        return {field: str(getattr(self, field)) for field in SIGNED_FIELDS}


class RecordFingerprint(models.Model):
    """A record's further fingerprint values, beyond the one on the record itself: a video's frames at
    later offsets, so a clip whose first seconds were cut still finds its record. Same kind as the
    record's; lookups match any of a record's values. A trigger adds each value to Fingerprint, as for
    records (migration 0004)."""

    id = models.BigAutoField(primary_key=True)
    record = models.ForeignKey(Record, on_delete=models.CASCADE, related_name="more_fingerprints")
    kind = models.CharField(max_length=32, choices=FingerprintKind.choices)
    value = models.BigIntegerField()  # as Record.phash_value
    signed_at = models.DateTimeField()  # the record's: newest-first within a value, from the index alone

    class Meta:
        indexes = [models.Index(fields=["kind", "value", "-signed_at"], name="recordfingerprint_exact")]

    def __str__(self) -> str:
        return f"{self.kind} {self.value & 0xFFFFFFFFFFFFFFFF:016x} of {self.record_id}"


class Fingerprint(models.Model):
    """Every distinct fingerprint value of the records once, in four 16-bit bands: what a near-match
    search scans (multi-index hashing: a hash within 7 bits agrees with some band to within 1 bit).

    Records crowd on a few values (flat images, a client re-sending one hash), and a search over
    records weighs every record of a crowded band: 87,000 records sharing three bands are 50 rows
    here. A database trigger on provenance_record adds the row for each new value (migration 0003),
    so no request spends a round trip on it; a value stays after its records are deleted, and the
    search skips values without a record. Bands are the value's bits 63-48, 47-32, 31-16 and 15-0.
    """

    id = models.BigAutoField(primary_key=True)
    kind = models.CharField(max_length=32, choices=FingerprintKind.choices)
    value = models.BigIntegerField()  # as Record.phash_value
    band0 = models.IntegerField()
    band1 = models.IntegerField()
    band2 = models.IntegerField()
    band3 = models.IntegerField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["kind", "value"], name="fingerprint_unique_value")]
        indexes = [models.Index(fields=["kind", f"band{band}"], include=["value"], name=f"fingerprint_band{band}")
                   for band in range(4)]

    def __str__(self) -> str:
        return f"{self.kind} {self.value & 0xFFFFFFFFFFFFFFFF:016x}"


class RecordUpstreamManifest(models.Model):
    """The C2PA manifest store an image carried when it was signed (POST /v1/sign). Signing removes it from
    the signed file, since the watermark changes the pixels its hard binding covers; it is kept here with
    the validation result it had against the upload, and `POST /v1/records/:id/c2pa/embed` carries it as
    the `parentOf` ingredient of our manifest (docs/decisions.md, "Upstream manifests")."""

    record = models.OneToOneField(Record, primary_key=True, on_delete=models.CASCADE,
                                  related_name="upstream_manifest")
    store = models.BinaryField()  # the JUMBF store verbatim, at most media_codecs.c2pa.MAX_UPSTREAM_STORE_BYTES
    format = models.CharField(max_length=40)  # the MIME type of the upload it came in
    label = models.CharField(max_length=200)  # its active manifest's label
    validation_results = models.JSONField()  # C2PA validation results of that manifest at signing

    def __str__(self) -> str:
        return f"upstream {self.label} of {self.record_id}"
