"""Job files in a directory every web process and worker shares (settings.JOB_STORAGE_DIR: a volume in
compose), one folder per job. The default backend.

    <JOB_STORAGE_DIR>/<job_id>/in-<position>     the uploaded file, deleted when the job finishes
    <JOB_STORAGE_DIR>/<job_id>/out-<position>    the signed file, deleted 24 hours after the job finished

Uploads arrive here streamed (core.uploads.limit_streamed_uploads wrote them to a temporary file, which is
moved, not read), so a web process never holds a job's file in memory. An output is staged beside its
final name (`out-<position>.<attempt>.part`) and renamed to it when its item is marked done, under the
item row's lock, so the file kept is the one the item's record names.
"""

import contextlib
import os
import shutil
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

from django.core.files.uploadedfile import UploadedFile

from jobs.storage.base import JobStorage, OutputFile, StagedOutput, StorageUnavailable

COPY_CHUNK = 1024 * 1024


class DirectoryStorage(JobStorage):
    def __init__(self, root: Path):
        self.root = root

    def job_folder(self, job_id: uuid.UUID) -> Path:
        return self.root / str(job_id)

    def input_path(self, job_id: uuid.UUID, position: int) -> Path:
        return self.job_folder(job_id) / f"in-{position}"

    def output_path(self, job_id: uuid.UUID, position: int) -> Path:
        return self.job_folder(job_id) / f"out-{position}"

    def input_save(self, job_id: uuid.UUID, position: int, upload: UploadedFile) -> None:
        """Moved when it is a temporary file on the same filesystem, else copied in chunks."""
        target = self.input_path(job_id, position)
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            temporary = getattr(upload, "temporary_file_path", None)
            if temporary is not None:
                with contextlib.suppress(OSError):  # another filesystem: copied below
                    os.replace(temporary(), target)
                    return
            upload.seek(0)
            with open(target, "wb") as out:
                shutil.copyfileobj(upload, out, COPY_CHUNK)
        except OSError as error:  # a full disk, a shared volume gone
            raise StorageUnavailable(f"job folder: {error.strerror or type(error).__name__}") from error

    def input_read(self, job_id: uuid.UUID, position: int) -> bytes | None:
        try:
            return self.input_path(job_id, position).read_bytes()
        except FileNotFoundError:
            return None
        except OSError as error:  # the shared volume unreadable: the job waits for it (jobs/tasks.py)
            raise StorageUnavailable(f"job folder: {error.strerror or type(error).__name__}") from error

    def output_stage(self, job_id: uuid.UUID, position: int, data: bytes) -> StagedOutput:
        staged = StagedOutput(job_id, position, f"out-{position}.{uuid.uuid4().hex}.part")
        path = self.job_folder(job_id) / staged.name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        return staged

    def output_commit(self, staged: StagedOutput) -> str:
        final = self.output_path(staged.job_id, staged.position)
        os.replace(self.job_folder(staged.job_id) / staged.name, final)
        staged.is_committed = True
        return final.name

    def staged_discard(self, staged: StagedOutput) -> None:
        if not staged.is_committed:
            (self.job_folder(staged.job_id) / staged.name).unlink(missing_ok=True)

    def output_open(self, job_id: uuid.UUID, position: int, name: str) -> OutputFile | None:
        # `name` is always out-<position> here (rows from before names were recorded have none).
        path = self.output_path(job_id, position)
        try:  # opened, not checked first: the cleanup may delete it between a check and the open
            file = path.open("rb")
        except FileNotFoundError:
            return None
        except OSError as error:  # the shared volume unreadable
            raise StorageUnavailable(f"job folder: {error.strerror or type(error).__name__}") from error
        return OutputFile(file, os.fstat(file.fileno()).st_size)

    def inputs_delete(self, job_id: uuid.UUID) -> None:
        folder = self.job_folder(job_id)
        if not folder.is_dir():
            return
        for path in folder.iterdir():
            if path.name.startswith("in-") or path.name.endswith(".part"):
                path.unlink(missing_ok=True)

    def job_files_delete(self, job_id: uuid.UUID) -> None:
        shutil.rmtree(self.job_folder(job_id), ignore_errors=True)

    def job_ids_older_than(self, seconds: float) -> Iterator[uuid.UUID]:
        """Job ids of the folders not modified for `seconds`."""
        if not self.root.is_dir():
            return
        horizon = time.time() - seconds
        for folder in self.root.iterdir():
            try:
                job_id = uuid.UUID(folder.name)
                modified = folder.stat().st_mtime
            except (ValueError, OSError):
                continue
            if modified < horizon:
                yield job_id
