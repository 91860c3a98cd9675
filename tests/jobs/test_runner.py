"""What a worker does with a job, run here in the test's process (jobs.runner.job_run is the task's body):
per-item results and failures, exactly-once when a job runs again, downloads and the cleanup. The same
with a real worker process, killed mid-job, is test_worker.py."""

import datetime
import io

import pytest
from django.utils import timezone

from audit.models import AuditEvent
from billing.models import UsageCounter
from jobs import runner, services, storage
from jobs.models import Job, JobItem
from jobs.runner import ItemOutput, _item_finish, job_run
from jobs.selectors import job_progress
from media_codecs import get_codec
from provenance.models import Record
from tests import factories, video
from tests.media import photo_bytes

pytestmark = pytest.mark.django_db
GOOD = photo_bytes("astronaut", "png")
BAD = b"this is no image at all" * 10


@pytest.fixture
def job_storage(tmp_path):
    return tmp_path


def _accept(client, generator, *contents: bytes, url: str = "/v1/sign/batch") -> str:
    body = {"content": [io.BytesIO(content) for content in contents], "model": "diffusion-xl",
            "generator_id": str(generator.pk), "format": "image"}
    response = client.post(url, body, format="multipart", HTTP_PREFER="respond-async")
    assert response.status_code == 202, response.content
    return response.json()["job_id"]


def _run(job_id, capture) -> None:
    with capture(execute=True):
        job_run(job_id)


def test_one_bad_file_fails_alone_and_the_others_are_signed(key_client, growth_org, growth_generator, emitted,
                                                            django_capture_on_commit_callbacks):
    client = key_client(growth_org)
    job_id = _accept(client, growth_generator, GOOD, BAD, GOOD)
    _run(job_id, django_capture_on_commit_callbacks)
    body = client.get(f"/v1/jobs/{job_id}").json()
    assert body["status"] == "succeeded" and body["progress"] == 1.0
    assert [item["status"] for item in body["items"]] == ["succeeded", "failed", "succeeded"]
    failed = body["items"][1]
    assert failed["error"]["error"] == "format_not_supported" and failed["record_id"] is None
    assert failed["download_url"] is None and failed["token"] is None
    signed = [item for item in body["items"] if item["status"] == "succeeded"]
    assert Record.objects.filter(org=growth_org).count() == 2
    assert UsageCounter.objects.get(org=growth_org).signatures_used == 2
    assert AuditEvent.objects.filter(org=growth_org, type="sign").count() == 2
    for item in signed:
        assert Record.objects.filter(pk=item["record_id"], org=growth_org).exists() and item["error"] is None
        assert item["download_url"].endswith(f"/v1/jobs/{job_id}/items/{body['items'].index(item)}/content")
    completed = [data for _, kind, data in emitted if kind == "job.completed"]
    assert completed == [{"job_id": job_id, "status": "succeeded", "items": 3, "succeeded": 2, "failed": 1,
                          "finished_at": completed[0]["finished_at"]}]
    folder = storage.job_storage().job_folder(job_id)
    assert not any(path.name.startswith("in-") for path in folder.iterdir())  # inputs gone


def test_a_job_whose_files_all_fail_has_failed(key_client, growth_org, growth_generator,
                                               django_capture_on_commit_callbacks):
    client = key_client(growth_org)
    job_id = _accept(client, growth_generator, BAD, BAD)
    _run(job_id, django_capture_on_commit_callbacks)
    body = client.get(f"/v1/jobs/{job_id}").json()
    assert body["status"] == "failed" and [item["status"] for item in body["items"]] == ["failed", "failed"]
    assert not UsageCounter.objects.filter(org=growth_org, signatures_used__gt=0).exists()


def test_running_a_job_again_signs_and_counts_nothing_more(key_client, growth_org, growth_generator, emitted,
                                                           django_capture_on_commit_callbacks):
    job_id = _accept(key_client(growth_org), growth_generator, GOOD, GOOD)
    _run(job_id, django_capture_on_commit_callbacks)
    Job.objects.filter(pk=job_id).update(status="running", finished_at=None)  # as if the ack was lost
    _run(job_id, django_capture_on_commit_callbacks)
    assert Record.objects.count() == 2 and UsageCounter.objects.get(org=growth_org).signatures_used == 2
    assert [kind for _, kind, _ in emitted].count("record.created") == 2


def test_a_second_run_of_a_finished_item_keeps_the_first_runs_record_and_file(
        key_client, growth_org, growth_generator, django_capture_on_commit_callbacks):
    job_id = _accept(key_client(growth_org), growth_generator, GOOD)
    _run(job_id, django_capture_on_commit_callbacks)
    item = JobItem.objects.select_related("job__org").get(job_id=job_id)
    first = storage.job_storage().output_path(job_id, 0).read_bytes()
    staged = storage.output_stage(item.job_id, 0, b"a later run's file")
    late = ItemOutput(b"a later run's file", item.record_id, "svc_other", "image/png", "image", draft=None)
    _item_finish(item, output=late, staged=staged)
    item.refresh_from_db()
    assert storage.job_storage().output_path(job_id, 0).read_bytes() == first and item.token != "svc_other"
    assert Record.objects.count() == 1


def test_the_signed_file_downloads_with_its_headers_for_its_organization_only(
        key_client, growth_org, other_org, growth_generator, django_capture_on_commit_callbacks):
    client = key_client(growth_org)
    job_id = _accept(client, growth_generator, GOOD)
    _run(job_id, django_capture_on_commit_callbacks)
    item = client.get(f"/v1/jobs/{job_id}").json()["items"][0]
    path = item["download_url"].split("://", 1)[1].split("/", 1)[1]
    response = client.get(f"/{path}")
    assert response.status_code == 200 and response["Content-Type"] == "image/png"
    signed = b"".join(response.streaming_content)
    assert get_codec("png").extract_token(signed) == item["token"] == response["X-Service-Token"]
    assert response["X-Service-Record-Id"] == item["record_id"] and response["X-Service-Format"] == "image"
    assert key_client(other_org).get(f"/{path}").status_code == 404


def test_a_signed_file_gone_from_storage_is_not_found_not_an_error(key_client, growth_org, growth_generator,
                                                                    job_storage, django_capture_on_commit_callbacks):
    client = key_client(growth_org)
    job_id = _accept(client, growth_generator, GOOD)
    _run(job_id, django_capture_on_commit_callbacks)
    storage.job_storage().output_path(job_id, 0).unlink()  # as a cleanup running at that moment leaves it
    response = client.get(f"/v1/jobs/{job_id}/items/0/content")
    assert response.status_code == 404 and response.json()["error"] == "not_found"


def test_the_quota_used_up_after_acceptance_fails_the_item(key_client, org, generator,
                                                           django_capture_on_commit_callbacks):
    factories.set_usage(org, 499)
    client = key_client(org)
    job_id = _accept(client, generator, GOOD, url="/v1/sign")
    factories.set_usage(org, 500)  # the last signature went to another request meanwhile
    _run(job_id, django_capture_on_commit_callbacks)
    body = client.get(f"/v1/jobs/{job_id}").json()
    assert body["status"] == "failed" and body["items"][0]["error"]["error"] == "signature_limit_reached"
    assert {"upgrade_url", "limit", "current"} <= set(body["items"][0]["error"])
    assert UsageCounter.objects.get(org=org).signatures_used == 500 and not Record.objects.exists()


def test_cleanup_deletes_signed_files_a_day_after_the_job_finished(key_client, growth_org, growth_generator,
                                                                  job_storage, django_capture_on_commit_callbacks):
    client = key_client(growth_org)
    job_id = _accept(client, growth_generator, GOOD)
    _run(job_id, django_capture_on_commit_callbacks)
    services.jobs_purge_expired()
    assert storage.job_storage().output_path(job_id, 0).is_file()  # not yet a day old
    Job.objects.filter(pk=job_id).update(finished_at=timezone.now() - datetime.timedelta(hours=24, minutes=1))
    services.jobs_purge_expired()
    assert not storage.job_storage().job_folder(job_id).exists()
    body = client.get(f"/v1/jobs/{job_id}").json()
    assert body["status"] == "succeeded" and body["items"][0]["download_url"] is None
    assert body["items"][0]["record_id"]  # the job still says what was signed
    assert client.get(f"/v1/jobs/{job_id}/items/0/content").status_code == 404
    Job.objects.filter(pk=job_id).update(finished_at=timezone.now() - datetime.timedelta(days=31))
    services.jobs_purge_expired()
    assert client.get(f"/v1/jobs/{job_id}").status_code == 404


def test_cleanup_deletes_the_files_of_an_upload_whose_job_was_never_stored(job_storage):
    import os
    import time
    import uuid

    orphan = storage.job_storage().job_folder(uuid.uuid4())
    orphan.mkdir()
    (orphan / "in-0").write_bytes(b"x")
    old = time.time() - 2 * 3600
    os.utime(orphan, (old, old))
    services.jobs_purge_expired()
    assert not orphan.exists()


def test_an_embed_job_gives_the_records_file_with_its_manifest(key_client, growth_org, growth_generator,
                                                               django_capture_on_commit_callbacks):
    from media_codecs.c2pa import read_manifest

    client = key_client(growth_org)
    signed = client.post("/v1/sign", {"content": io.BytesIO(GOOD), "model": "m",
                                      "generator_id": str(growth_generator.pk)}, format="multipart")
    record_id = signed["X-Service-Record-Id"]
    accepted = client.post(f"/v1/records/{record_id}/c2pa/embed", {"content": io.BytesIO(signed.content)},
                           format="multipart", HTTP_PREFER="respond-async")
    assert accepted.status_code == 202 and accepted["Preference-Applied"] == "respond-async"
    job_id = accepted.json()["job_id"]
    _run(job_id, django_capture_on_commit_callbacks)
    item = client.get(f"/v1/jobs/{job_id}").json()["items"][0]
    assert item["status"] == "succeeded" and item["record_id"] == record_id
    assert item["token"] == signed["X-Service-Token"]
    download = client.get(f"/v1/jobs/{job_id}/items/0/content")
    embedded = b"".join(download.streaming_content)
    assert download["Content-Type"] == "image/png" and read_manifest(embedded) is not None
    assert UsageCounter.objects.get(org=growth_org).signatures_used == 1  # the embed consumes none


def test_an_item_whose_upload_is_gone_fails_and_the_job_still_ends(key_client, growth_org, growth_generator,
                                                                   django_capture_on_commit_callbacks):
    client = key_client(growth_org)
    job_id = _accept(client, growth_generator, GOOD, GOOD)
    storage.job_storage().input_path(job_id, 1).unlink()
    _run(job_id, django_capture_on_commit_callbacks)
    body = client.get(f"/v1/jobs/{job_id}").json()
    assert body["status"] == "succeeded" and [item["status"] for item in body["items"]] == ["succeeded", "failed"]
    assert body["items"][1]["error"]["error"] == "internal_error"


class Clock:
    """time.monotonic for jobs.runner, moved by the test: the write interval without waiting."""

    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch, settings):
    settings.JOBS_PROGRESS_INTERVAL = 1.0
    moved = Clock()
    monkeypatch.setattr(runner.time, "monotonic", moved)
    return moved


def _job_of(org, count: int) -> Job:
    job = Job.objects.create(org=org, kind=Job.Kind.SIGN, status=Job.Status.RUNNING)
    JobItem.objects.bulk_create([JobItem(job=job, position=position) for position in range(count)])
    return job


def _stored(item: JobItem) -> float:
    return JobItem.objects.get(pk=item.pk).progress


def test_an_items_progress_is_stored_once_an_interval_and_a_step_passed(org, clock, django_assert_num_queries):
    item = _job_of(org, 1).items.get()
    progress = runner.ItemProgress(item)
    with django_assert_num_queries(0):
        progress(0.5)  # within the first interval: a file done sooner writes nothing
    clock.now += 1.0
    progress(0.5)
    assert _stored(item) == 0.5
    clock.now += 0.5
    with django_assert_num_queries(0):
        progress(0.8)  # within the interval since the last write
    clock.now += 0.5
    with django_assert_num_queries(0):
        progress(0.505)  # under a step above the last write
    progress(0.6)
    assert _stored(item) == 0.6


def test_thousands_of_reports_write_an_item_at_most_once_an_interval(org, clock, django_assert_max_num_queries):
    item = _job_of(org, 1).items.get()
    progress = runner.ItemProgress(item)
    with django_assert_max_num_queries(10):
        for report in range(1, 10_001):
            clock.now += 0.001  # ten seconds of reports, one a millisecond
            progress(report / 10_000)
    assert 0.9 <= _stored(item) < 1
    clock.now += 1
    progress(1.0)
    assert _stored(item) == JobItem.RUNNING_MAX  # 1 is for a done item


def test_a_report_after_the_item_is_done_changes_nothing(org, clock):
    item = _job_of(org, 1).items.get()
    progress = runner.ItemProgress(item)
    JobItem.objects.filter(pk=item.pk).update(status=JobItem.Status.SUCCEEDED, progress=0.3)
    clock.now += 5
    progress(0.9)
    assert _stored(item) == 0.3


def test_a_rerun_of_an_item_keeps_the_share_its_first_run_stored(org, clock):
    item = _job_of(org, 1).items.get()
    first = runner.ItemProgress(item)
    clock.now += 5
    first(0.7)
    second = runner.ItemProgress(JobItem.objects.get(pk=item.pk))  # the worker killed, the job run again
    clock.now += 5
    second(0.2)
    assert _stored(item) == 0.7
    clock.now += 5
    second(0.75)
    assert _stored(item) == 0.75


def test_job_progress_adds_the_running_items_shares_to_the_done_items(org):
    job = _job_of(org, 4)
    first, second, third, _ = job.items.all()
    JobItem.objects.filter(pk=first.pk).update(status=JobItem.Status.SUCCEEDED, progress=0.4)
    JobItem.objects.filter(pk=second.pk).update(status=JobItem.Status.FAILED)
    JobItem.objects.filter(pk=third.pk).update(progress=0.5)
    assert job_progress(Job.objects.prefetch_related("items").get(pk=job.pk)) == pytest.approx(2.5 / 4)
    JobItem.objects.filter(pk=third.pk).update(progress=1.0)  # never stored so, but a running item reads under 1
    assert job_progress(Job.objects.prefetch_related("items").get(pk=job.pk)) == pytest.approx(2.99 / 4)


def test_a_running_video_item_reports_through_the_runner(key_client, growth_org, growth_generator, clock,
                                                         django_capture_on_commit_callbacks, monkeypatch):
    stored: list[float] = []
    original = runner.ItemProgress.__call__

    def watched(self, fraction):
        clock.now += 0.4  # each report comes 0.4 s after the last, as on a slow machine
        original(self, fraction)
        stored.append(JobItem.objects.get(pk=self.item_pk).progress)

    monkeypatch.setattr(runner.ItemProgress, "__call__", watched)
    client = key_client(growth_org)
    body = {"content": io.BytesIO(video.make_video(seconds=5.0, keyint=25)), "model": "m",
            "generator_id": str(growth_generator.pk)}
    response = client.post("/v1/sign", body, format="multipart", HTTP_PREFER="respond-async")
    _run(response.json()["job_id"], django_capture_on_commit_callbacks)
    assert stored == sorted(stored) and 0 < max(stored) < 1
    assert len(set(stored)) <= len(stored) * 0.4 + 2  # an interval of 1 s: every third report or so
    assert client.get(response["Location"]).json()["progress"] == 1.0


def test_a_clip_too_long_to_mark_in_a_request_is_marked_as_a_job(key_client, growth_org, growth_generator,
                                                                  django_capture_on_commit_callbacks):
    from tests import hostile_media

    # 320x240 declared 590 s long: past a request's marking (20 s of 1080p), under the 10-minute limit
    long_clip = hostile_media.mp4_declaring_seconds(video.make_video(seconds=1.0), 590)
    client = key_client(growth_org)
    body = {"model": "m", "generator_id": str(growth_generator.pk)}
    now = client.post("/v1/sign", {**body, "content": io.BytesIO(long_clip)}, format="multipart")
    assert now.status_code == 201
    assert Record.objects.get(pk=now["X-Service-Record-Id"]).watermark_id == "none"
    for fields, marked in (({}, True), ({"watermark": "false"}, False)):
        response = client.post("/v1/sign", {**body, **fields, "content": io.BytesIO(long_clip)}, format="multipart",
                               HTTP_PREFER="respond-async")
        _run(response.json()["job_id"], django_capture_on_commit_callbacks)
        item = client.get(response["Location"]).json()["items"][0]
        record = Record.objects.get(pk=item["record_id"])
        assert (record.watermark_id != "none") is marked
        if marked:
            download = client.get("/" + item["download_url"].split("://", 1)[1].split("/", 1)[1])
            signed = b"".join(download.streaming_content)
            assert get_codec("mp4").extract_watermark(signed) == int(record.watermark_id, 16)
