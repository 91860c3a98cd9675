"""Accepting jobs (their files kept, their rows written, the worker told) and deleting them when they expire.

What a worker does with a job is in jobs/runner.py. Quota: a sign job's signatures are checked when it is
accepted (402 when the organization has no room for all of them, as the synchronous route answers) and
counted one by one as each item is stored; an item that finds the allowance used up by then fails with
`signature_limit_reached` (docs/decisions.md, "Jobs on Celery").
"""

import logging
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile
from django.db import transaction
from django.utils import timezone

from accounts.gates import require_feature
from accounts.models import Organization
from core.errors import ValidationFailed
from jobs import storage
from jobs.models import Job, JobItem
from provenance.c2pa_embed import record_c2pa_embed_admit
from provenance.signing import signing_admit

MAX_BATCH_FILES = 50  # POST /v1/sign/batch: up to 50 `content` files
OUTPUT_LIFETIME = timedelta(hours=24)  # a finished job's signed files can be downloaded for 24 hours
ROW_LIFETIME = timedelta(days=30)  # then its rows (ids, tokens, errors) stay readable until this
ORPHAN_AGE = timedelta(hours=1)  # files without a job row: an upload whose request failed

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class SignParams:
    generator_id: str
    model: str
    format: str | None = None
    c2pa: bool = False
    watermark: bool = True
    visible: bool = False  # disclosure=visible: the visible label


def job_sign_accept(*, org: Organization, params: SignParams, uploads: Sequence[UploadedFile],
                    batch: bool = False) -> Job:
    """Accept files to sign as one job (POST /v1/sign with `Prefer: respond-async`, POST /v1/sign/batch).

    Checks before anything is kept: the batch gate (402 `plan_required`), file count (400), the generator
    (404/403), its mode (400), the quota for every file (402). Format and content are checked per item by
    the worker. Raises those ApiErrors.
    """
    if batch:
        require_feature(org, "batch_sign")
    _require_files(uploads, MAX_BATCH_FILES if batch else 1)
    signing_admit(org=org, generator_id=params.generator_id, count=len(uploads), c2pa=params.c2pa)
    return _job_create(org=org, kind=Job.Kind.SIGN, params=params.__dict__, uploads=uploads)


def job_embed_accept(*, org: Organization, record_id: uuid.UUID, uploads: Sequence[UploadedFile]) -> Job:
    """Accept a C2PA embed as a job (`Prefer: respond-async`): the record's checks now (402, 403, 404, 400),
    the file's by the worker."""
    record_c2pa_embed_admit(org=org, record_id=record_id)
    _require_files(uploads, 1)
    return _job_create(org=org, kind=Job.Kind.C2PA_EMBED, params={"record_id": str(record_id)}, uploads=uploads)


def _require_files(uploads: Sequence[UploadedFile], most: int) -> None:
    if not uploads:
        raise ValidationFailed(details={"content": ["Upload a file in this multipart field."]})
    if len(uploads) > most:  # the upload handler refuses more files while streaming; this is the contract
        raise ValidationFailed(details={"content": [f"Send at most {most} files."]})
    for upload in uploads:
        if not upload.size:
            raise ValidationFailed(details={"content": ["The file is empty."]})


def _job_create(*, org: Organization, kind: str, params: dict, uploads: Sequence[UploadedFile]) -> Job:
    job = Job(id=uuid.uuid4(), org=org, kind=kind, params=params)
    try:
        for position, upload in enumerate(uploads):
            storage.input_save(job.pk, position, upload)
        with transaction.atomic():
            job.save(force_insert=True)
            JobItem.objects.bulk_create([JobItem(job=job, position=position) for position in range(len(uploads))])
            # After commit, so that no worker looks for a job not yet visible; `robust`: a broker that does
            # not answer leaves the job queued for the cleanup's next pass, not a 500 for an accepted job.
            # A named callable: Django's robust on_commit logs a failure by the callable's __qualname__, which a
            # functools.partial lacks (the log call itself raised, a 500 for an accepted job).
            job_id = job.pk
            transaction.on_commit(lambda: job_enqueue(job_id), robust=True)
    except BaseException:
        try:
            storage.job_files_delete(job.pk)
        except storage.StorageUnavailable:  # the same outage: the cleanup deletes the orphans once it is over
            logger.warning("Job %s: its files could not be deleted yet", job.pk, exc_info=True)
        raise
    return job


def job_enqueue(job_id: uuid.UUID) -> None:
    """Hand the job to a worker through the broker."""
    # Here, not at the top: jobs.tasks imports this module, and Celery is loaded only by a process that enqueues.
    from jobs.tasks import job_run_task

    job_run_task.apply_async(args=[str(job_id)], queue=settings.JOBS_QUEUE)


def jobs_requeue_stalled() -> int:
    """Hand again to the broker the jobs queued for longer than they should be (their message was lost
    with a broker that did not answer, or with a broker's data). A job handed out twice is run once: the
    second run finds its items done."""
    horizon = timezone.now() - timedelta(seconds=settings.JOBS_STALLED_AFTER)
    stalled = list(Job.objects.filter(status=Job.Status.QUEUED, created_at__lt=horizon).values_list("pk", flat=True))
    for job_id in stalled:
        job_enqueue(job_id)
    return len(stalled)


def jobs_purge_expired() -> int:
    """Delete signed files 24 hours after their job finished, job rows after 30 days, and the files of
    uploads whose job row was never committed. Returns how many jobs lost files or rows."""
    now = timezone.now()
    expired = list(Job.objects.filter(finished_at__lt=now - OUTPUT_LIFETIME, files_deleted_at__isnull=True)
                   .values_list("pk", flat=True))
    for job_id in expired:
        storage.job_files_delete(job_id)
    Job.objects.filter(pk__in=expired).update(files_deleted_at=now)
    _, deleted_by_model = Job.objects.filter(finished_at__lt=now - ROW_LIFETIME).delete()
    deleted = deleted_by_model.get(Job._meta.label, 0)
    candidates = set(storage.job_ids_older_than(ORPHAN_AGE.total_seconds()))
    orphans = candidates - set(Job.objects.filter(pk__in=candidates).values_list("pk", flat=True))
    for job_id in orphans:
        storage.job_files_delete(job_id)
    return len(expired) + len(orphans) + deleted
