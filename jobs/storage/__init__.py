"""Where a job's files wait for the worker and its signed files wait for their download: a directory every
web process and worker shares (jobs/storage/directory.py, the default) or, when settings.JOB_STORAGE_URL
names one, an S3-compatible bucket (jobs/storage/s3.py). jobs/ calls the functions below, which ask the
configured backend; what each does is in jobs/storage/base.py.
"""

import contextlib
import functools
import logging
import uuid
from collections.abc import Iterator
from pathlib import Path

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile

from core.errors import RETRY_AFTER_UNAVAILABLE, ServiceUnavailable
from jobs.storage.base import JobStorage, OutputFile, StagedOutput, StorageUnavailable
from jobs.storage.directory import DirectoryStorage

__all__ = ["JobStorage", "OutputFile", "StagedOutput", "StorageUnavailable", "job_storage"]

logger = logging.getLogger(__name__)


@contextlib.contextmanager
def _unavailable_is_503(what: str):
    """On a request: storage that cannot be reached is the client's 503 with Retry-After, never a 500."""
    try:
        yield
    except StorageUnavailable:
        logger.exception("Job storage is unavailable")
        raise ServiceUnavailable(f"Job storage is unavailable; {what}. Try again shortly.",
                                 headers={"Retry-After": str(RETRY_AFTER_UNAVAILABLE)}) from None


def job_storage() -> JobStorage:
    """The backend the settings name (read on each call: a test may change them)."""
    if not settings.JOB_STORAGE_URL:
        return DirectoryStorage(Path(settings.JOB_STORAGE_DIR))
    return _s3_storage(settings.JOB_STORAGE_URL, settings.JOB_STORAGE_S3_ENDPOINT_URL, settings.JOB_STORAGE_S3_REGION)


@functools.lru_cache(maxsize=8)  # one in a deployment; tests change the settings
def _s3_storage(url: str, endpoint_url: str, region: str) -> JobStorage:
    # Imported here: boto3 costs a process memory, and only processes configured for S3 load it. One client
    # a process (boto3's clients are thread-safe), made on first use, so never shared across a fork.
    from jobs.storage.s3 import S3Storage

    return S3Storage.from_url(url, endpoint_url=endpoint_url, region=region)


def input_save(job_id: uuid.UUID, position: int, upload: UploadedFile) -> None:
    """Keep an upload (on a request: ServiceUnavailable when the storage cannot)."""
    with _unavailable_is_503("no job was made"):
        job_storage().input_save(job_id, position, upload)


def input_read(job_id: uuid.UUID, position: int) -> bytes | None:
    return job_storage().input_read(job_id, position)


def output_stage(job_id: uuid.UUID, position: int, data: bytes) -> StagedOutput:
    return job_storage().output_stage(job_id, position, data)


def output_commit(staged: StagedOutput) -> str:
    """Make the staged file the item's (called with the item row locked); returns the name to record."""
    return job_storage().output_commit(staged)


def staged_discard(staged: StagedOutput) -> None:
    job_storage().staged_discard(staged)


def output_open(job_id: uuid.UUID, position: int, name: str) -> OutputFile | None:
    """An item's signed file for its download (ServiceUnavailable when the storage cannot be read)."""
    with _unavailable_is_503("the file could not be read"):
        return job_storage().output_open(job_id, position, name)


def inputs_delete(job_id: uuid.UUID) -> None:
    job_storage().inputs_delete(job_id)


def job_files_delete(job_id: uuid.UUID) -> None:
    job_storage().job_files_delete(job_id)


def job_ids_older_than(seconds: float) -> Iterator[uuid.UUID]:
    return job_storage().job_ids_older_than(seconds)
