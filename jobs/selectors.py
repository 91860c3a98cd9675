"""Reads of jobs: always through the organization (another organization's job id is a 404)."""

import uuid
from dataclasses import dataclass
from typing import BinaryIO

from accounts.models import Organization
from core.errors import NotFound
from jobs import storage
from jobs.models import Job, JobItem


def job_get(*, org: Organization, job_id: uuid.UUID) -> Job:
    """The organization's job with its items. Raises NotFound for an unknown or another organization's id."""
    job = Job.objects.for_org(org).prefetch_related("items").filter(pk=job_id).first()
    if job is None:
        raise NotFound("Job not found.")
    return job


def job_progress(job: Job) -> float:
    """The share of the job's work done, from 0 to 1: items done (succeeded or failed) count 1, running items
    the share of their file's work the worker stored. Never lower than an earlier answer: an item's stored
    share only grows, and a done item's 1 is above any share (JobItem.RUNNING_MAX)."""
    items = job.items.all()
    if not items:
        return 1.0 if job.is_finished else 0.0
    return sum(item.done_share for item in items) / len(items)


def item_has_download(job: Job, item: JobItem) -> bool:
    return item.status == JobItem.Status.SUCCEEDED and job.files_deleted_at is None


@dataclass(frozen=True)
class Download:
    file: BinaryIO  # open, read in chunks: the caller's response closes it
    size: int
    item: JobItem


def job_item_download(*, org: Organization, job_id: uuid.UUID, position: int) -> Download:
    """An item's signed file, while it is kept (24 hours after the job finished). Raises NotFound otherwise."""
    job = job_get(org=org, job_id=job_id)
    item = next((item for item in job.items.all() if item.position == position), None)
    missing = NotFound("No signed file here: the item did not succeed, or its file expired.")
    if item is None or not item_has_download(job, item):
        raise missing
    # Opened, not checked first: the cleanup may delete it between a check and the open.
    output = storage.output_open(job.pk, position, item.output_name)
    if output is None:
        raise missing
    return Download(output.file, output.size, item)
