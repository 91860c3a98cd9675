"""Where a job's files wait for the worker and its signed files wait for their download: a directory every
web process and worker shares (settings.JOB_STORAGE_DIR: a volume in compose), one folder per job.

    <JOB_STORAGE_DIR>/<job_id>/in-<position>     the uploaded file, deleted when the job finishes
    <JOB_STORAGE_DIR>/<job_id>/out-<position>    the signed file, deleted 24 hours after the job finished

Uploads arrive here streamed (core.uploads.limit_streamed_uploads wrote them to a temporary file, which is
moved, not read), so a web process never holds a job's file in memory.
"""

import contextlib
import os
import shutil
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile

COPY_CHUNK = 1024 * 1024


def _root() -> Path:
    return Path(settings.JOB_STORAGE_DIR)


def job_folder(job_id: uuid.UUID) -> Path:
    return _root() / str(job_id)


def input_path(job_id: uuid.UUID, position: int) -> Path:
    return job_folder(job_id) / f"in-{position}"


def output_path(job_id: uuid.UUID, position: int) -> Path:
    return job_folder(job_id) / f"out-{position}"


def input_save(job_id: uuid.UUID, position: int, upload: UploadedFile) -> None:
    """Keep an uploaded file as the job's input `position`: moved when it is a temporary file on the same
    filesystem, else copied in chunks."""
    target = input_path(job_id, position)
    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = getattr(upload, "temporary_file_path", None)
    if temporary is not None:
        with contextlib.suppress(OSError):  # another filesystem: copied below
            os.replace(temporary(), target)
            return
    upload.seek(0)
    with open(target, "wb") as out:
        shutil.copyfileobj(upload, out, COPY_CHUNK)


def input_read(job_id: uuid.UUID, position: int) -> bytes | None:
    """The input's bytes (the worker's memory, not a web process's); None when it is gone."""
    try:
        return input_path(job_id, position).read_bytes()
    except FileNotFoundError:
        return None


def output_stage(job_id: uuid.UUID, position: int, data: bytes) -> Path:
    """Write a signed file beside its final name; `output_commit` gives it that name once its item is
    marked done, so a second run of the same item never replaces the file the first one recorded."""
    staged = job_folder(job_id) / f"out-{position}.{uuid.uuid4().hex}.part"
    staged.parent.mkdir(parents=True, exist_ok=True)
    staged.write_bytes(data)
    return staged


def output_commit(staged: Path, job_id: uuid.UUID, position: int) -> None:
    os.replace(staged, output_path(job_id, position))


def staged_discard(staged: Path) -> None:
    staged.unlink(missing_ok=True)


def inputs_delete(job_id: uuid.UUID) -> None:
    """Delete the job's inputs and any file a killed worker left half-written."""
    folder = job_folder(job_id)
    if not folder.is_dir():
        return
    for path in folder.iterdir():
        if path.name.startswith("in-") or path.name.endswith(".part"):
            path.unlink(missing_ok=True)


def job_files_delete(job_id: uuid.UUID) -> None:
    shutil.rmtree(job_folder(job_id), ignore_errors=True)


def job_folders(older_than_seconds: float) -> Iterator[uuid.UUID]:
    """Job ids of the folders not modified for `older_than_seconds` (the cleanup's candidates)."""
    root = _root()
    if not root.is_dir():
        return
    horizon = time.time() - older_than_seconds
    for folder in root.iterdir():
        try:
            job_id = uuid.UUID(folder.name)
            modified = folder.stat().st_mtime
        except (ValueError, OSError):
            continue
        if modified < horizon:
            yield job_id
