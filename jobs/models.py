"""Jobs: work accepted now and done by a worker (signing large or many files), one item per input file."""

import uuid

from django.db import models
from django.utils import timezone

from accounts.models import Organization, OrgScopedQuerySet


class Job(models.Model):
    class Kind(models.TextChoices):
        SIGN = "sign", "sign (POST /v1/sign and /v1/sign/batch)"
        C2PA_EMBED = "c2pa_embed", "C2PA embed (POST /v1/records/:id/c2pa/embed)"

    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        SUCCEEDED = "succeeded"
        FAILED = "failed"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    org = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="jobs")
    kind = models.CharField(max_length=20, choices=Kind.choices)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    # What every item is done with: sign {generator_id, model, format, c2pa, watermark, visible}; embed {record_id}.
    params = models.JSONField(default=dict)
    created_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True, db_index=True)
    # When the cleanup deleted the signed files (24 hours after finishing); download_url is null from then.
    files_deleted_at = models.DateTimeField(null=True, blank=True)

    objects = OrgScopedQuerySet.as_manager()

    class Meta:
        indexes = [models.Index(fields=["status", "created_at"], name="job_status_created")]

    def __str__(self) -> str:
        return f"{self.kind} job {self.pk} ({self.status})"

    @property
    def is_finished(self) -> bool:
        return self.status in (self.Status.SUCCEEDED, self.Status.FAILED)


class JobItem(models.Model):
    """One input file of a job. Its row is the unit of exactly-once: a worker stores the item's record
    (and counts its signature) in the transaction that marks it done, and a retried job skips done items."""

    class Status(models.TextChoices):
        QUEUED = "queued"
        SUCCEEDED = "succeeded"
        FAILED = "failed"

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="items")
    position = models.PositiveIntegerField()  # the file's place in the request, from 0
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    record_id = models.UUIDField(null=True, blank=True)  # the record signed (sign) or embedded (embed)
    token = models.CharField(max_length=200, blank=True, default="")
    # The output's media type and family, for the download's headers; empty until it succeeded.
    media_type = models.CharField(max_length=100, blank=True, default="")
    family = models.CharField(max_length=10, blank=True, default="")
    # The signed file's name in job storage, recorded with the item's success: on S3 the key of the attempt
    # whose record the item names (jobs/storage/s3.py); in a directory always out-<position>.
    output_name = models.CharField(max_length=100, blank=True, default="")
    error = models.JSONField(null=True, blank=True)  # the error envelope's {error, message, details?}
    finished_at = models.DateTimeField(null=True, blank=True)
    # How far the work on the file is while the item is queued (0 to RUNNING_MAX), stored by the worker at
    # most every JOBS_PROGRESS_INTERVAL and never lowered (jobs/runner.py); a done item counts as 1.
    progress = models.FloatField(default=0.0)

    class Meta:
        ordering = ["position"]
        constraints = [models.UniqueConstraint(fields=["job", "position"], name="job_item_unique_position")]

    def __str__(self) -> str:
        return f"item {self.position} of job {self.job_id} ({self.status})"

    # The most a running item's progress says: its job reads 1 only when every item is done.
    RUNNING_MAX = 0.99

    @property
    def is_done(self) -> bool:
        return self.status != self.Status.QUEUED

    @property
    def done_share(self) -> float:
        """1 once done, else the share of its work the worker last stored."""
        return 1.0 if self.is_done else min(self.progress, self.RUNNING_MAX)
