"""Jobs with their files on S3 (a real endpoint over HTTP: moto's server) run by a real Celery worker
process: the web side (this process) uploads to the bucket, the worker reads the inputs from it and writes
the signed files there, the download streams from it, and the worker's periodic cleanup deletes the
objects. Neither side keeps a file on local disk. The worker's log joins the session's secret scan, so the
S3 credentials it was given must never appear in it.

PostgreSQL only, as test_worker.py: the worker is another process.
"""

import datetime
import uuid

import pytest
from django.utils import timezone

from billing.models import UsageCounter
from jobs.models import Job, JobItem
from tests.jobs.test_worker import (  # noqa: F401 - the module's queue and its setting, as fixtures
    BAD,
    GOOD,
    _accept,
    _poll_until_finished,
    _postgres_only,
    _queue_setting,
    queue,
)
from tests.jobs.worker import Worker
from tests.log_scan import watch_file
from tests.redis_server import requires_redis
from tests.waiting import wait_for_process

pytestmark = [requires_redis, pytest.mark.django_db(transaction=True)]
PREFIX = f"jobs-{uuid.uuid4().hex[:8]}"


@pytest.fixture(autouse=True)
def _on_s3(s3, settings, monkeypatch):
    """This process's side of the jobs: the same bucket and prefix as the worker's."""
    for name, value in s3.env().items():
        monkeypatch.setenv(name, value)
    for name, value in s3.settings(PREFIX).items():
        setattr(settings, name, value)


@pytest.fixture(scope="module")
def worker(queue, job_storage, s3, tmp_path_factory, _postgres_only):  # noqa: F811
    log = tmp_path_factory.mktemp("worker") / "worker.log"
    watch_file(log)
    started = Worker(queue=queue, storage=job_storage, log=log, env={**s3.env(), **s3.settings(PREFIX)}).start()
    yield started
    started.stop()


def test_a_job_on_s3_runs_on_the_worker_and_its_file_downloads_for_its_organization_only(
        worker, key_client, growth_org, other_org, growth_generator, s3, job_storage):
    client = key_client(growth_org)
    job_id = _accept(client, growth_generator, GOOD, BAD, GOOD)
    body, _ = _poll_until_finished(client, job_id, worker)
    assert body["status"] == "succeeded"
    assert [item["status"] for item in body["items"]] == ["succeeded", "failed", "succeeded"]
    assert UsageCounter.objects.get(org=growth_org).signatures_used == 2
    names = dict(JobItem.objects.filter(job_id=job_id, status="succeeded").values_list("position", "output_name"))
    # The inputs went when the job ended; the signed files are the recorded attempts' keys, and no others.
    assert s3.keys(f"{PREFIX}/{job_id}/") == sorted(f"{PREFIX}/{job_id}/{name}" for name in names.values())
    path = "/" + body["items"][2]["download_url"].split("://", 1)[1].split("/", 1)[1]
    response = client.get(path)
    assert response.status_code == 200 and response["X-Service-Token"] == body["items"][2]["token"]
    signed = b"".join(response.streaming_content)
    stored = s3.client().get_object(Bucket=s3.bucket, Key=f"{PREFIX}/{job_id}/{names[2]}")["Body"].read()
    assert signed == stored and signed != GOOD
    assert key_client(other_org).get(path).status_code == 404
    assert not list(job_storage.iterdir())  # nothing on local disk, on either side


def test_the_workers_periodic_cleanup_deletes_the_objects_of_an_expired_job(worker, key_client, growth_org,
                                                                             growth_generator, s3):
    from jobs.tasks import jobs_cleanup_task

    client = key_client(growth_org)
    job_id = _accept(client, growth_generator, GOOD)
    _poll_until_finished(client, job_id, worker)
    assert len(s3.keys(f"{PREFIX}/{job_id}/")) == 1
    Job.objects.filter(pk=job_id).update(finished_at=timezone.now() - datetime.timedelta(hours=25))
    jobs_cleanup_task.apply_async(queue=worker.queue)

    def cleaned():
        return Job.objects.filter(pk=job_id, files_deleted_at__isnull=False).exists()

    wait_for_process(cleaned, worker.process, what="the cleanup task", details=worker.output)
    assert s3.keys(f"{PREFIX}/{job_id}/") == []
