"""Jobs with their files on S3 (JOB_STORAGE_URL, a real endpoint over HTTP: moto's server), the runner in
the test's process: the upload kept on S3 and nothing on local disk, the download streamed in chunks for
the job's organization only, a second run of an item keeping the first run's file, the cleanup deleting
the objects. The same on a real worker process is test_worker_s3.py."""

import datetime
import uuid

import pytest
from django.http import FileResponse
from django.utils import timezone

from jobs import services, storage
from jobs.models import Job, JobItem
from jobs.runner import ItemOutput, _item_finish
from media_codecs import get_codec
from provenance.models import Record
from tests.jobs.test_runner import GOOD, _accept, _run

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _on_s3(s3_prefix):
    return s3_prefix


def _signed_job(client, generator, capture) -> str:
    """A one-file job accepted and run to its end; its id."""
    job_id = _accept(client, generator, GOOD)
    _run(job_id, capture)
    return job_id


def test_an_accepted_upload_is_kept_on_s3_and_nothing_on_local_disk(key_client, growth_org, growth_generator, s3,
                                                                     s3_prefix, job_storage):
    job_id = _accept(key_client(growth_org), growth_generator, GOOD, GOOD)
    assert s3.keys(s3_prefix) == [f"{s3_prefix}{job_id}/in-0", f"{s3_prefix}{job_id}/in-1"]
    assert storage.input_read(uuid.UUID(job_id), 1) == GOOD
    assert not list(job_storage.iterdir())


def test_a_finished_jobs_inputs_are_deleted_and_its_signed_files_kept(key_client, growth_org, growth_generator, s3,
                                                                      s3_prefix, django_capture_on_commit_callbacks):
    job_id = _accept(key_client(growth_org), growth_generator, GOOD, GOOD)
    _run(job_id, django_capture_on_commit_callbacks)
    names = list(JobItem.objects.filter(job_id=job_id).values_list("output_name", flat=True))
    assert all(name.startswith(f"out-{position}-") for position, name in enumerate(names))
    assert s3.keys(s3_prefix) == sorted(f"{s3_prefix}{job_id}/{name}" for name in names)


def test_the_signed_file_streams_in_chunks_for_its_organization_only(key_client, growth_org, other_org,
                                                                     growth_generator,
                                                                     django_capture_on_commit_callbacks):
    client = key_client(growth_org)
    job_id = _signed_job(client, growth_generator, django_capture_on_commit_callbacks)
    item = client.get(f"/v1/jobs/{job_id}").json()["items"][0]
    path = "/" + item["download_url"].split("://", 1)[1].split("/", 1)[1]
    response = client.get(path)
    assert response.status_code == 200 and response.streaming and response["Content-Type"] == "image/png"
    chunks = list(response.streaming_content)
    signed = b"".join(chunks)
    assert len(chunks) > 1 and max(map(len, chunks)) <= FileResponse.block_size  # read as sent, never whole
    assert int(response["Content-Length"]) == len(signed)
    assert get_codec("png").extract_token(signed) == item["token"] == response["X-Service-Token"]
    assert response["X-Service-Record-Id"] == item["record_id"]
    refused = key_client(other_org).get(path)
    assert refused.status_code == 404 and refused.json()["error"] == "not_found"


def test_a_second_run_of_a_finished_item_keeps_the_first_runs_file(key_client, growth_org, growth_generator, s3,
                                                                    s3_prefix, django_capture_on_commit_callbacks):
    client = key_client(growth_org)
    job_id = _signed_job(client, growth_generator, django_capture_on_commit_callbacks)
    item = JobItem.objects.select_related("job__org").get(job_id=job_id)
    first = b"".join(client.get(f"/v1/jobs/{job_id}/items/0/content").streaming_content)
    staged = storage.output_stage(item.job_id, 0, b"a later run's file")  # a redelivered job's attempt
    late = ItemOutput(b"a later run's file", item.record_id, "svc_other", "image/png", "image", draft=None)
    try:
        _item_finish(item, output=late, staged=staged)
    finally:
        storage.staged_discard(staged)  # as the runner does
    kept = JobItem.objects.get(pk=item.pk)
    assert kept.output_name == item.output_name and kept.token == item.token
    assert b"".join(client.get(f"/v1/jobs/{job_id}/items/0/content").streaming_content) == first
    assert s3.keys(s3_prefix) == [f"{s3_prefix}{job_id}/{item.output_name}"] and Record.objects.count() == 1


def test_a_signed_file_gone_from_s3_is_not_found_not_an_error(key_client, growth_org, growth_generator,
                                                               django_capture_on_commit_callbacks):
    client = key_client(growth_org)
    job_id = _signed_job(client, growth_generator, django_capture_on_commit_callbacks)
    storage.job_files_delete(uuid.UUID(job_id))  # as a cleanup running at that moment leaves it
    response = client.get(f"/v1/jobs/{job_id}/items/0/content")
    assert response.status_code == 404 and response.json()["error"] == "not_found"


def test_cleanup_deletes_the_objects_a_day_after_the_job_finished(key_client, growth_org, growth_generator, s3,
                                                                  s3_prefix, django_capture_on_commit_callbacks):
    client = key_client(growth_org)
    job_id = _signed_job(client, growth_generator, django_capture_on_commit_callbacks)
    services.jobs_purge_expired()
    assert len(s3.keys(f"{s3_prefix}{job_id}/")) == 1  # not yet a day old
    Job.objects.filter(pk=job_id).update(finished_at=timezone.now() - datetime.timedelta(hours=24, minutes=1))
    services.jobs_purge_expired()
    assert s3.keys(s3_prefix) == []
    assert client.get(f"/v1/jobs/{job_id}").json()["items"][0]["download_url"] is None
    assert client.get(f"/v1/jobs/{job_id}/items/0/content").status_code == 404


def test_cleanup_deletes_the_objects_and_uploads_of_jobs_never_stored(growth_org, s3, s3_prefix, monkeypatch):
    orphan, half_written, live = uuid.uuid4(), uuid.uuid4(), Job.objects.create(org=growth_org, kind="sign")
    client = s3.client()
    for job_id in (orphan, live.pk):
        client.put_object(Bucket=s3.bucket, Key=f"{s3_prefix}{job_id}/in-0", Body=b"x")
    client.create_multipart_upload(Bucket=s3.bucket, Key=f"{s3_prefix}{half_written}/in-0")
    services.jobs_purge_expired()  # an hour must pass first
    assert s3.keys(s3_prefix) == sorted([f"{s3_prefix}{orphan}/in-0", f"{s3_prefix}{live.pk}/in-0"])
    monkeypatch.setattr(services, "ORPHAN_AGE", datetime.timedelta(seconds=-60))  # every file past the age
    services.jobs_purge_expired()
    assert s3.keys(s3_prefix) == [f"{s3_prefix}{live.pk}/in-0"] and s3.uploads(s3_prefix) == []
