"""Job storage that cannot be reached: the client gets 503 with Retry-After and the error envelope, never a
500, and nothing is left behind (no job, no item, nothing counted). A real S3 endpoint that went away (moto's
server, stopped) and a job folder that cannot be made (its path runs through a file)."""

import io
import uuid

import pytest

from billing.selectors import signatures_used_this_month as usage_of
from jobs.models import Job, JobItem
from tests.jobs.s3_server import s3_endpoint
from tests.jobs.test_runner import GOOD, _accept, _run

pytestmark = pytest.mark.django_db


def _batch(client, generator):
    return client.post("/v1/sign/batch", {"content": [io.BytesIO(GOOD), io.BytesIO(GOOD)], "model": "m",
                                          "generator_id": str(generator.pk), "format": "image"},
                       format="multipart", HTTP_PREFER="respond-async")


def _assert_unavailable(response) -> None:
    assert response.status_code == 503, response.content[:300]
    assert response.json()["error"] == "service_unavailable" and "storage" in response.json()["message"]
    assert int(response["Retry-After"]) > 0


@pytest.fixture
def s3_gone(settings, monkeypatch):
    """JOB_STORAGE_URL naming an S3 endpoint that answered once and is now stopped."""
    with s3_endpoint() as endpoint:
        prefix = f"jobs-{uuid.uuid4().hex[:8]}"
        for name, value in endpoint.env().items():
            monkeypatch.setenv(name, value)
    for name, value in endpoint.settings(prefix).items():
        setattr(settings, name, value)
    return endpoint


def test_a_batch_while_s3_is_down_is_503_and_leaves_no_job(key_client, growth_org, growth_generator, s3_gone):
    used = usage_of(growth_org)
    _assert_unavailable(_batch(key_client(growth_org), growth_generator))
    assert not Job.objects.filter(org=growth_org).exists() and not JobItem.objects.exists()
    assert usage_of(growth_org) == used


def test_an_async_sign_while_the_job_folder_cannot_be_made_is_503(key_client, growth_org, growth_generator, settings,
                                                                   tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_bytes(b"not a folder")
    settings.JOB_STORAGE_DIR = str(blocker / "jobs")
    response = key_client(growth_org).post("/v1/sign", {"content": io.BytesIO(GOOD), "model": "m",
                                                        "generator_id": str(growth_generator.pk)},
                                           format="multipart", HTTP_PREFER="respond-async")
    _assert_unavailable(response)
    assert not Job.objects.filter(org=growth_org).exists()


def test_a_download_while_s3_is_down_is_503_then_the_file_once_it_is_back(key_client, growth_org, growth_generator,
                                                                          settings, monkeypatch,
                                                                          django_capture_on_commit_callbacks):
    client = key_client(growth_org)
    with s3_endpoint() as endpoint:
        for name, value in endpoint.env().items():
            monkeypatch.setenv(name, value)
        for name, value in endpoint.settings(f"jobs-{uuid.uuid4().hex[:8]}").items():
            setattr(settings, name, value)
        job_id = _accept(client, growth_generator, GOOD)
        _run(job_id, django_capture_on_commit_callbacks)
        path = f"/v1/jobs/{job_id}/items/0/content"
        assert client.get(path).status_code == 200
    _assert_unavailable(client.get(path))
    status = client.get(f"/v1/jobs/{job_id}")  # the job itself is in the database: still answered
    assert status.status_code == 200 and status.json()["status"] == "succeeded"
