"""What a worker does with a job (jobs.tasks.job_run_task): each item not yet done, then the job's end.

Exactly once, whatever dies when: an item's record is stored, its signature counted (`usage_consume`),
audited and announced in the same transaction that marks the item done, under the item row's lock, and a
run skips done items. A worker killed mid-item loses that item's transaction (nothing stored or counted)
and the broker hands the job to another worker (acks_late); a second run of an item that a first run
finished meanwhile finds it done under the lock and discards its own work. The signed file is written
under a staging name and becomes the item's in that transaction (renamed, or on S3 its attempt's key
recorded: jobs/storage/s3.py), so the file kept is always the one whose record the item names.

While an item's file is worked on, the work reports how far it is (media_codecs/progress.py) and
`ItemProgress` stores it on the item row, at most every JOBS_PROGRESS_INTERVAL and only upward, with an
UPDATE that touches a queued item only: a report that comes after the item was marked done changes
nothing. A rerun of an item (its worker killed) keeps the share the first run stored until it passes it.
"""

import logging
import time
import uuid
from dataclasses import dataclass

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from core.errors import ApiError
from jobs import storage
from jobs.models import Job, JobItem
from media_codecs.progress import STEP
from provenance.c2pa_embed import record_c2pa_embed
from provenance.selectors import record_token
from provenance.services import RecordDraft, record_create
from provenance.signing import content_sign_prepare
from webhooks.events import events_emit

logger = logging.getLogger(__name__)

INTERNAL_ERROR = {"error": "internal_error", "message": "This file could not be processed; the error is logged."}
INPUT_GONE = {"error": "internal_error", "message": "The uploaded file is no longer stored; send it again."}


@dataclass(frozen=True)
class ItemOutput:
    data: bytes
    record_id: uuid.UUID
    token: str
    media_type: str
    family: str
    draft: RecordDraft | None = None  # a record to store with the item (sign); None when it exists (embed)


def job_run(job_id: uuid.UUID | str) -> None:
    """Do every item of the job not yet done, then finish the job. A finished or unknown job is a no-op."""
    job = Job.objects.select_related("org").filter(pk=job_id).first()
    if job is None or job.is_finished:
        return
    Job.objects.filter(pk=job.pk, status=Job.Status.QUEUED).update(status=Job.Status.RUNNING,
                                                                    started_at=timezone.now())
    for item in job.items.filter(status=JobItem.Status.QUEUED).order_by("position"):
        _item_run(job, item)
    _job_finish(job)


def _item_run(job: Job, item: JobItem) -> None:
    if not JobItem.objects.filter(pk=item.pk, status=JobItem.Status.QUEUED).exists():
        return  # a concurrent run of the job (a redelivery) did it meanwhile
    data = storage.input_read(job.pk, item.position)
    if data is None:  # the upload is gone (its folder lost): the item cannot be done, the job can still end
        _item_finish(item, error=INPUT_GONE)
        return
    try:
        output = _work(job, data, ItemProgress(item))
    except ApiError as error:
        _item_finish(item, error=error.body())
        return
    except Exception:
        logger.exception("Job %s item %s failed", job.pk, item.position)
        _item_finish(item, error=INTERNAL_ERROR)
        return
    del data
    staged = storage.output_stage(job.pk, item.position, output.data)
    try:
        _item_finish(item, output=output, staged=staged)
    finally:
        storage.staged_discard(staged)  # gone already when it took its final name


class ItemProgress:
    """The progress callback of one item's work: stores the fraction reported on the item row when at least
    JOBS_PROGRESS_INTERVAL passed since the item started or was last stored and it moved up by STEP; capped
    at JobItem.RUNNING_MAX (1 is for done items). Bounded: one write a second at most, none for a file done
    within the interval, a hundred at most however long it runs."""

    def __init__(self, item: JobItem):
        self.item_pk = item.pk
        self.stored = item.progress  # what a first run stored: a rerun writes only above it
        self.interval = settings.JOBS_PROGRESS_INTERVAL
        self.next_at = time.monotonic() + self.interval

    def __call__(self, fraction: float) -> None:
        fraction = min(fraction, JobItem.RUNNING_MAX)
        now = time.monotonic()
        if now < self.next_at or fraction < self.stored + STEP:
            return
        # A conditional UPDATE, no lock: done (or a concurrent run's higher share) wins over this report.
        JobItem.objects.filter(pk=self.item_pk, status=JobItem.Status.QUEUED,
                               progress__lt=fraction).update(progress=fraction)
        self.stored, self.next_at = fraction, now + self.interval


def _work(job: Job, data: bytes, progress: ItemProgress) -> ItemOutput:
    """The item's signed file: the synchronous routes' own service functions, run here."""
    params = job.params
    if job.kind == Job.Kind.C2PA_EMBED:
        record_id = uuid.UUID(params["record_id"])
        embedded = record_c2pa_embed(org=job.org, record_id=record_id, data=data, progress=progress)
        return ItemOutput(embedded.data, record_id, record_token(record_id), embedded.mime_type, "")
    prepared = content_sign_prepare(org=job.org, generator_id=params["generator_id"], model=params["model"],
                                    data=data, declared_family=params.get("format"), c2pa=params.get("c2pa", False),
                                    watermark=params.get("watermark", True), visible=params.get("visible", False),
                                    progress=progress)
    draft = prepared.draft
    return ItemOutput(prepared.data, draft.record_id, prepared.token, prepared.codec.mime_type,
                      prepared.codec.family, draft)


def _item_finish(item: JobItem, *, output: ItemOutput | None = None, staged: storage.StagedOutput | None = None,
                 error: dict | None = None) -> None:
    """Mark the item done, with its record stored (and counted) in the same transaction; nothing when
    another run marked it first."""
    job = item.job
    with transaction.atomic():
        locked = JobItem.objects.select_for_update().get(pk=item.pk)
        if locked.is_done:
            return
        if output is not None and output.draft is not None:
            try:  # record_create's own savepoint: a refused record is rolled back, its quota.limit kept
                record_create(org=job.org, draft=output.draft)
            except ApiError as refused:  # signature_limit_reached: the allowance went to other signatures
                output, error = None, refused.body()
        if output is not None:
            locked.output_name = storage.output_commit(staged)
            locked.status, locked.record_id, locked.token = JobItem.Status.SUCCEEDED, output.record_id, output.token
            locked.media_type, locked.family = output.media_type, output.family
        else:
            locked.status, locked.error = JobItem.Status.FAILED, error
        locked.finished_at = timezone.now()
        locked.save(update_fields=["status", "record_id", "token", "media_type", "family", "output_name", "error",
                                   "finished_at"])


def _job_finish(job: Job) -> None:
    """Succeeded when any item succeeded, failed when all failed; `job.completed` announced once."""
    with transaction.atomic():
        statuses = list(job.items.values_list("status", flat=True))
        if JobItem.Status.QUEUED in statuses:
            return  # an item a concurrent run still holds: that run finishes the job
        succeeded = statuses.count(JobItem.Status.SUCCEEDED)
        status = Job.Status.SUCCEEDED if succeeded else Job.Status.FAILED
        finished_at = timezone.now()
        if not Job.objects.filter(pk=job.pk, finished_at__isnull=True).update(status=status, finished_at=finished_at):
            return  # another run finished it
        events_emit(org=job.org, events=[("job.completed", {
            "job_id": str(job.pk), "status": status, "items": len(statuses), "succeeded": succeeded,
            "failed": len(statuses) - succeeded, "finished_at": finished_at.isoformat().replace("+00:00", "Z")})])
        transaction.on_commit(lambda: storage.inputs_delete(job.pk))
