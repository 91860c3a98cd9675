"""The S3 backend (jobs/storage/s3.py) against a real S3 endpoint over HTTP (moto's server): an upload read
in parts, never whole; every attempt's signed file under a key of its own; deleting a job's inputs, its
files and half-written uploads; the cleanup's candidates. The same backend under the job routes and the
runner is test_runner_s3.py; under a real worker, test_worker_s3.py."""

import hashlib
import os
import subprocess
import sys
import uuid
from pathlib import Path

from django.core.files.uploadedfile import SimpleUploadedFile, UploadedFile

from jobs import storage
from jobs.storage.s3 import PART_SIZE, S3Storage
from tests.jobs.large_files import RecordingFile, large_file


def test_a_large_upload_is_read_in_parts_never_whole(s3, s3_prefix, tmp_path):
    size = 2 * PART_SIZE + PART_SIZE // 2  # three parts, the last a short one
    expected = large_file(tmp_path / "upload", size)
    recorded = RecordingFile(tmp_path / "upload")
    job_id = uuid.uuid4()
    storage.input_save(job_id, 0, UploadedFile(recorded, name="upload", size=size))
    assert recorded.reads and all(0 < asked <= PART_SIZE for asked in recorded.reads), recorded.reads
    assert len(recorded.reads) >= 3
    body = s3.client().get_object(Bucket=s3.bucket, Key=f"{s3_prefix}{job_id}/in-0")["Body"]
    digest = hashlib.sha256()
    for chunk in body.iter_chunks(1024 * 1024):
        digest.update(chunk)
    assert digest.hexdigest() == expected


def test_an_input_reads_back_and_a_missing_one_is_none(s3, s3_prefix):
    job_id = uuid.uuid4()
    storage.input_save(job_id, 0, SimpleUploadedFile("a.png", b"the uploaded bytes"))
    assert storage.input_read(job_id, 0) == b"the uploaded bytes"
    assert storage.input_read(job_id, 1) is None
    assert s3.keys(s3_prefix) == [f"{s3_prefix}{job_id}/in-0"]


def test_each_attempt_writes_a_key_of_its_own_and_only_the_committed_one_is_kept(s3, s3_prefix):
    job_id = uuid.uuid4()
    first = storage.output_stage(job_id, 0, b"the first run's file")
    name = storage.output_commit(first)
    late = storage.output_stage(job_id, 0, b"a second run's file")  # the same item, run again
    assert late.name != name
    storage.staged_discard(first)  # committed: kept
    storage.staged_discard(late)
    assert s3.keys(s3_prefix) == [f"{s3_prefix}{job_id}/{name}"]
    output = storage.output_open(job_id, 0, name)
    with output.file as file:
        assert file.read() == b"the first run's file" and output.size == len(b"the first run's file")
    assert storage.output_open(job_id, 0, late.name) is None and storage.output_open(job_id, 0, "") is None


def test_deleting_a_jobs_inputs_keeps_its_signed_files_and_aborts_its_half_written_uploads(s3, s3_prefix):
    job_id, other_job = uuid.uuid4(), uuid.uuid4()
    storage.input_save(job_id, 0, SimpleUploadedFile("a", b"input"))
    storage.input_save(other_job, 0, SimpleUploadedFile("a", b"another job's input"))
    name = storage.output_commit(storage.output_stage(job_id, 0, b"signed"))
    # A web process killed in the middle of a multipart upload leaves it begun.
    s3.client().create_multipart_upload(Bucket=s3.bucket, Key=f"{s3_prefix}{job_id}/in-1")
    storage.inputs_delete(job_id)
    assert s3.keys(s3_prefix) == sorted([f"{s3_prefix}{job_id}/{name}", f"{s3_prefix}{other_job}/in-0"])
    assert s3.uploads(s3_prefix) == []


def test_deleting_a_jobs_files_deletes_every_object_of_the_job_and_no_other(s3, s3_prefix):
    job_id, other_job = uuid.uuid4(), uuid.uuid4()
    for position in range(3):
        storage.input_save(job_id, position, SimpleUploadedFile("a", b"input"))
        storage.output_commit(storage.output_stage(job_id, position, b"signed"))
    storage.output_stage(job_id, 0, b"an attempt a killed worker left")
    storage.input_save(other_job, 0, SimpleUploadedFile("a", b"another job's input"))
    s3.client().create_multipart_upload(Bucket=s3.bucket, Key=f"{s3_prefix}{job_id}/in-3")
    storage.job_files_delete(job_id)
    assert s3.keys(s3_prefix) == [f"{s3_prefix}{other_job}/in-0"] and s3.uploads(s3_prefix) == []


def test_the_cleanups_candidates_are_the_jobs_with_files_or_uploads_older_than_asked(s3, s3_prefix):
    with_file, with_upload = uuid.uuid4(), uuid.uuid4()
    storage.input_save(with_file, 0, SimpleUploadedFile("a", b"input"))
    s3.client().put_object(Bucket=s3.bucket, Key=f"{s3_prefix}not-a-job/file", Body=b"someone else's")
    assert set(storage.job_ids_older_than(3600)) == set()  # written just now
    # (moto dates every upload in progress 2010-11-10, so its age is checked only with the horizon below)
    s3.client().create_multipart_upload(Bucket=s3.bucket, Key=f"{s3_prefix}{with_upload}/in-0")
    assert set(storage.job_ids_older_than(-60)) == {with_file, with_upload}  # a horizon ahead of them all


def test_a_bucket_without_prefix_keeps_job_folders_at_its_root(s3):
    client = s3.client()
    client.create_bucket(Bucket=f"{s3.bucket}-root")
    bare = S3Storage(bucket=f"{s3.bucket}-root", prefix="", client=client)
    job_id = uuid.uuid4()
    bare.input_save(job_id, 0, SimpleUploadedFile("a", b"input"))
    assert [entry["Key"] for entry in client.list_objects_v2(Bucket=f"{s3.bucket}-root")["Contents"]] == [
        f"{job_id}/in-0"]
    assert list(bare.job_ids_older_than(-60)) == [job_id]


def test_a_job_storage_url_that_names_no_bucket_stops_the_start():
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings", "JOB_STORAGE_URL": "ftp://files/jobs"}
    result = subprocess.run([sys.executable, "-c", "import django; django.setup()"], env=env, capture_output=True,
                            text=True, cwd=Path(__file__).resolve().parents[2], timeout=300)
    last = result.stderr.strip().splitlines()[-1]
    assert result.returncode != 0 and "ImproperlyConfigured" in last and "JOB_STORAGE_URL" in last
