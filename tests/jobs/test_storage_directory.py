"""The directory backend (jobs/storage/directory.py, the default) on its own: an upload that is not a
temporary file on this filesystem is copied in chunks, never read whole; a staged file becomes the item's
by a rename and a discarded one goes; the cleanup's candidates. Its use by the routes and the runner is
test_api.py, test_runner.py and test_worker.py."""

import os
import time
import uuid

from django.core.files.uploadedfile import UploadedFile

from jobs import storage
from jobs.storage.directory import COPY_CHUNK
from tests.jobs.large_files import RecordingFile, large_file


def test_an_upload_that_cannot_be_moved_is_copied_in_chunks_never_whole(job_storage, tmp_path):
    size = 5 * COPY_CHUNK + 7
    large_file(tmp_path / "upload", size)
    recorded = RecordingFile(tmp_path / "upload")
    job_id = uuid.uuid4()
    storage.input_save(job_id, 0, UploadedFile(recorded, name="upload", size=size))
    assert all(0 < asked <= COPY_CHUNK for asked in recorded.reads) and len(recorded.reads) >= 6
    assert storage.input_read(job_id, 0) == (tmp_path / "upload").read_bytes()


def test_a_staged_file_becomes_the_items_by_a_rename_and_a_discarded_one_goes(job_storage):
    job_id = uuid.uuid4()
    first = storage.output_stage(job_id, 0, b"first")
    assert storage.output_commit(first) == "out-0"
    late = storage.output_stage(job_id, 0, b"late")
    storage.staged_discard(first)
    storage.staged_discard(late)
    assert sorted(path.name for path in (job_storage / str(job_id)).iterdir()) == ["out-0"]
    output = storage.output_open(job_id, 0, "out-0")
    with output.file as file:
        assert file.read() == b"first" and output.size == 5
    assert storage.output_open(job_id, 1, "out-1") is None


def test_the_cleanups_candidates_are_the_folders_not_written_for_the_age_asked(job_storage):
    old, young = uuid.uuid4(), uuid.uuid4()
    for job_id in (old, young):
        storage.output_commit(storage.output_stage(job_id, 0, b"signed"))
    (job_storage / "not-a-job").mkdir()
    an_hour_ago = time.time() - 3600
    os.utime(job_storage / str(old), (an_hour_ago, an_hour_ago))
    assert set(storage.job_ids_older_than(1800)) == {old}
