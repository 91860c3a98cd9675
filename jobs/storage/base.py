"""What jobs/ asks of the place a job's files are kept, whichever it is: one subclass per backend
(jobs/storage/directory.py, jobs/storage/s3.py), chosen by settings in jobs/storage/__init__.py.

A job's files: its inputs, one per position, kept from the request that accepted the job until the job
ends, and its signed outputs, kept 24 hours after. An output is written in two steps so that a second run
of an item never replaces the file the first run recorded: `output_stage` writes it under a name of its
own attempt, and `output_commit`, called in the transaction that marks the item done, under the item
row's lock, makes it the item's file and returns the name the item records.
"""

import uuid
from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO

from django.core.files.uploadedfile import UploadedFile


class StorageUnavailable(Exception):
    """The storage could not be reached, or refused the operation (a disk full, a bucket down or denied):
    what was asked was not done. The routes answer 503 with Retry-After (jobs/storage/__init__.py)."""


@dataclass
class StagedOutput:
    """A signed file written by one attempt at an item, not yet the item's."""

    job_id: uuid.UUID
    position: int
    name: str  # the attempt's own name in the job's folder or prefix
    is_committed: bool = False


@dataclass(frozen=True)
class OutputFile:
    file: BinaryIO  # open, read in chunks: the caller closes it
    size: int


class JobStorage(ABC):
    @abstractmethod
    def input_save(self, job_id: uuid.UUID, position: int, upload: UploadedFile) -> None:
        """Keep an uploaded file as the job's input `position`, streamed: never whole in memory."""

    @abstractmethod
    def input_read(self, job_id: uuid.UUID, position: int) -> bytes | None:
        """The input's bytes (a worker's memory, not a web process's); None when it is gone."""

    @abstractmethod
    def output_stage(self, job_id: uuid.UUID, position: int, data: bytes) -> StagedOutput:
        """Write a signed file under its attempt's own name."""

    @abstractmethod
    def output_commit(self, staged: StagedOutput) -> str:
        """Make the staged file the item's; returns the name the item records (for `output_open`)."""

    @abstractmethod
    def staged_discard(self, staged: StagedOutput) -> None:
        """Delete a staged file that did not become the item's (a no-op once it did)."""

    @abstractmethod
    def output_open(self, job_id: uuid.UUID, position: int, name: str) -> OutputFile | None:
        """The item's signed file, open for reading in chunks; None when it is gone."""

    @abstractmethod
    def inputs_delete(self, job_id: uuid.UUID) -> None:
        """Delete the job's inputs and whatever a killed process left half-written."""

    @abstractmethod
    def job_files_delete(self, job_id: uuid.UUID) -> None:
        """Delete every file of the job."""

    @abstractmethod
    def job_ids_older_than(self, seconds: float) -> Iterator[uuid.UUID]:
        """Ids of the jobs whose files were last written over `seconds` ago (the cleanup's candidates)."""
