"""Jobs run by a real Celery worker process (`celery -A config worker`) on Redis and the test database:
the life cycle with its progress, a worker SIGKILLed mid-job and the job finished by the next one with
every signature counted once, a stalled job handed out again, a download from the worker's file.

PostgreSQL only: the worker is another process, and pytest's SQLite test database lives in the test
process's memory, where no other process can read it.
"""

import io
from datetime import timedelta

import numpy as np
import pytest
import redis
from django.db import connection

from audit.models import AuditEvent
from billing.models import UsageCounter
from jobs import services
from jobs.models import Job, JobItem
from provenance.models import Record
from tests import video
from tests.jobs.conftest import new_queue
from tests.jobs.worker import Worker, broker_url, publishing_to
from tests.media import photo_bytes
from tests.redis_server import requires_redis
from tests.waiting import wait_for_process

pytestmark = [requires_redis, pytest.mark.django_db(transaction=True)]
GOOD = photo_bytes("astronaut", "png")
BAD = b"this is no image at all" * 10


@pytest.fixture(scope="module", autouse=True)
def _postgres_only(django_db_setup, django_db_blocker):
    with django_db_blocker.unblock():
        if connection.vendor != "postgresql":
            pytest.skip("a worker process cannot open pytest's in-memory SQLite test database")


@pytest.fixture(scope="module")
def queue():
    """The test process enqueues where this module's worker listens (its own queue, its own Redis db)."""
    with publishing_to(broker_url()):
        name = new_queue()
        yield name
    client = redis.Redis.from_url(broker_url())
    leftovers = client.keys(f"*{name}*")
    if leftovers:
        client.delete(*leftovers)


@pytest.fixture(autouse=True)
def _queue_setting(settings, queue):
    settings.JOBS_QUEUE = queue


@pytest.fixture(scope="module")
def worker(queue, job_storage, tmp_path_factory, _postgres_only):
    # Progress stored every 0.2 s (1 s in production): a file of a second's work shows a few values.
    started = Worker(queue=queue, storage=job_storage, log=tmp_path_factory.mktemp("worker") / "worker.log",
                     env={"JOBS_PROGRESS_INTERVAL": "0.2", "JOBS_STORAGE_RETRY_SECONDS": "1"}).start()
    yield started
    started.stop()


def _accept(client, generator, *contents: bytes) -> str:
    body = {"content": [io.BytesIO(content) for content in contents], "model": "diffusion-xl",
            "generator_id": str(generator.pk), "format": "image"}
    response = client.post("/v1/sign/batch", body, format="multipart")
    assert response.status_code == 202, response.content
    return response.json()["job_id"]


def _poll_until_finished(client, job_id: str, worker: Worker) -> tuple[dict, list[tuple[str, float]]]:
    seen: list[tuple[str, float]] = []

    def finished():
        body = client.get(f"/v1/jobs/{job_id}").json()
        if not seen or seen[-1] != (body["status"], body["progress"]):
            seen.append((body["status"], body["progress"]))
        return body if body["status"] in ("succeeded", "failed") else None

    body = wait_for_process(finished, worker.process, what=f"job {job_id}", details=worker.output)
    return body, seen


def test_a_job_goes_from_queued_through_running_to_succeeded(worker, key_client, growth_org, growth_generator):
    client = key_client(growth_org)
    job_id = _accept(client, growth_generator, *[GOOD] * 4)
    body, seen = _poll_until_finished(client, job_id, worker)
    assert body["status"] == "succeeded" and body["progress"] == 1.0
    assert all(item["status"] == "succeeded" and item["record_id"] and item["token"] for item in body["items"])
    statuses = [status for status, _ in seen]
    assert statuses[0] in ("queued", "running") and statuses[-1] == "succeeded"
    assert statuses == sorted(statuses, key=["queued", "running", "succeeded"].index)  # never backwards
    progress = [value for _, value in seen]
    assert progress == sorted(progress) and progress[-1] == 1.0  # between items, a running file's share
    assert UsageCounter.objects.get(org=growth_org).signatures_used == 4


@pytest.fixture(scope="module")
def long_video() -> bytes:
    """About a second of a worker's CPU to sign: its fingerprints decode 4 s of 1080p at 60 frames a second."""
    picture = video.moving_gradient(0, 1920, 1080)
    return video.make_video(size=(1920, 1080), seconds=4.5, fps=60, keyint=60, preset="ultrafast",
                            picture=lambda index, width, height: np.roll(picture, 8 * index, axis=1))


def test_a_one_file_jobs_progress_moves_while_its_video_is_signed(worker, key_client, growth_org,
                                                                  growth_generator, long_video):
    client = key_client(growth_org)
    body = {"content": io.BytesIO(long_video), "model": "video-xl", "generator_id": str(growth_generator.pk)}
    response = client.post("/v1/sign", body, format="multipart", HTTP_PREFER="respond-async")
    assert response.status_code == 202, response.content
    body, seen = _poll_until_finished(client, response.json()["job_id"], worker)
    assert body["status"] == "succeeded" and body["progress"] == 1.0, body
    progress = [value for _, value in seen]
    assert progress == sorted(progress), seen  # never backwards across polls
    assert [value for status, value in seen if status == "running" and 0 < value < 1], seen
    assert JobItem.objects.get(job_id=body["job_id"]).progress <= JobItem.RUNNING_MAX


def test_the_workers_file_downloads_for_the_jobs_organization_only(worker, key_client, growth_org, other_org,
                                                                   growth_generator):
    client = key_client(growth_org)
    job_id = _accept(client, growth_generator, GOOD, BAD)
    body, _ = _poll_until_finished(client, job_id, worker)
    good, bad = body["items"]
    assert good["status"] == "succeeded" and bad["status"] == "failed"
    assert bad["error"]["error"] == "format_not_supported"
    path = "/" + good["download_url"].split("://", 1)[1].split("/", 1)[1]
    response = client.get(path)
    assert response.status_code == 200 and response["X-Service-Token"] == good["token"]
    signed = b"".join(response.streaming_content)
    verified = client.post("/v1/verify", {"content": io.BytesIO(signed)}, format="multipart").json()
    assert verified["authentic"] and verified["record_id"] == good["record_id"]
    assert key_client(other_org).get(path).status_code == 404


def job_outlives_a_killed_worker(worker: Worker, client, org, generator) -> None:
    """A 12-file job whose worker is SIGKILLed after its first item finishes on the next worker, each file
    signed, stored, counted and audited once (this module's broker, and test_worker_rabbitmq.py's)."""
    files = 12
    job_id = _accept(client, generator, *[photo_bytes(name, "png") for name in
                                          ("astronaut", "chelsea", "coffee") * (files // 3)])

    def some_done():
        done = JobItem.objects.filter(job_id=job_id).exclude(status="queued").count()
        return done if done else None

    done_before_kill = wait_for_process(some_done, worker.process, what="a first item", details=worker.output)
    worker.kill()
    assert done_before_kill < files, "the job finished before the kill: give it more files"
    assert Job.objects.get(pk=job_id).status == "running"
    worker.start()  # another worker process, on the same queue: the module's other tests keep it
    body, _ = _poll_until_finished(client, job_id, worker)
    assert body["status"] == "succeeded" and all(item["status"] == "succeeded" for item in body["items"])
    record_ids = {item["record_id"] for item in body["items"]}
    assert len(record_ids) == files
    assert set(map(str, Record.objects.filter(org=org).values_list("pk", flat=True))) == record_ids
    assert UsageCounter.objects.get(org=org).signatures_used == files
    assert AuditEvent.objects.filter(org=org, type="sign").count() == files


def test_a_job_outlives_a_worker_killed_mid_job_and_counts_each_signature_once(worker, key_client, growth_org,
                                                                                 growth_generator):
    job_outlives_a_killed_worker(worker, key_client(growth_org), growth_org, growth_generator)


def test_a_job_whose_message_was_lost_is_handed_out_again_by_the_cleanup(worker, key_client, growth_org,
                                                                         growth_generator, settings):
    client = key_client(growth_org)
    settings.JOBS_QUEUE = lost = new_queue()  # nobody listens there: the message is as good as lost
    job_id = _accept(client, growth_generator, GOOD)
    redis.Redis.from_url(broker_url()).delete(lost)
    settings.JOBS_QUEUE = worker.queue
    stalled_at = Job.objects.get(pk=job_id).created_at - timedelta(seconds=settings.JOBS_STALLED_AFTER)
    Job.objects.filter(pk=job_id).update(created_at=stalled_at)
    assert services.jobs_requeue_stalled() == 1
    body, _ = _poll_until_finished(client, job_id, worker)
    assert body["status"] == "succeeded"


def test_a_job_whose_files_are_away_runs_again_once_they_are_back(worker, key_client, growth_org,
                                                                  growth_generator, settings, job_storage):
    client = key_client(growth_org)
    settings.JOBS_QUEUE = new_queue()  # accepted while no worker listens: its files go away first
    job_id = _accept(client, growth_generator, GOOD)
    folder = job_storage / job_id
    aside = folder.rename(job_storage / f"{job_id}.aside")
    folder.write_bytes(b"a file where the job's folder was: its input cannot be read")
    settings.JOBS_QUEUE = worker.queue
    services.job_enqueue(job_id)
    wait_for_process(lambda: "Task jobs.tasks.job_run[" in worker.output() and " retry: " in worker.output(),
                     worker.process, what="the job's retry", details=worker.output)
    assert Job.objects.get(pk=job_id).status == "running"  # waiting, not failed, nothing done
    folder.unlink()
    aside.rename(folder)
    body, _ = _poll_until_finished(client, job_id, worker)
    assert body["status"] == "succeeded" and body["items"][0]["status"] == "succeeded"
    assert UsageCounter.objects.get(org=growth_org).signatures_used == 1


def test_a_worker_runs_the_periodic_cleanup_task(worker, growth_org):
    from jobs.tasks import jobs_cleanup_task

    finished = Job.objects.create(org=growth_org, kind="sign", status="succeeded",
                                  finished_at=Job.objects.model._meta.get_field("created_at").default()
                                  - services.OUTPUT_LIFETIME * 2)
    jobs_cleanup_task.apply_async(queue=worker.queue)

    def cleaned():
        return Job.objects.filter(pk=finished.pk, files_deleted_at__isnull=False).exists()

    wait_for_process(cleaned, worker.process, what="the cleanup task", details=worker.output)
