"""The job routes without a worker: what is checked when a job is accepted, what the answer looks like,
scoping, and the synchronous answer left as it was. The worker's side is in test_worker.py."""

import io

import pytest

from billing.models import UsageCounter
from jobs import storage
from jobs.models import Job, JobItem
from provenance.models import Record
from tests import factories
from tests.media import photo_bytes

pytestmark = pytest.mark.django_db
ASYNC = {"HTTP_PREFER": "respond-async"}


@pytest.fixture
def job_storage(tmp_path):
    return tmp_path  # each test its own: no worker shares it here


def _sign(client, generator, *contents: bytes, url: str = "/v1/sign", headers: dict | None = None, **fields):
    body = {"content": [io.BytesIO(content) for content in contents], "model": "diffusion-xl",
            "generator_id": str(generator.pk), **fields}
    return client.post(url, body, format="multipart", **(headers or {}))


def test_without_prefer_the_signed_file_comes_back_as_before(key_client, org, generator):
    response = _sign(key_client(org), generator, photo_bytes("astronaut", "png"))
    assert response.status_code == 201 and response["Content-Type"] == "image/png"
    assert "Preference-Applied" not in response and response["X-Service-Record-Id"]
    assert not Job.objects.exists()


def test_prefer_respond_async_answers_202_with_the_job(key_client, org, generator, job_storage):
    response = _sign(key_client(org), generator, photo_bytes("astronaut", "png"), headers=ASYNC)
    assert response.status_code == 202, response.content
    body = response.json()
    assert set(body) == {"job_id", "status"} and body["status"] == "queued"
    assert response["Location"] == f"/v1/jobs/{body['job_id']}"
    assert response["Preference-Applied"] == "respond-async"
    job = Job.objects.get(pk=body["job_id"])
    assert job.org == org and job.kind == "sign" and job.params["generator_id"] == str(generator.pk)
    assert list(job.items.values_list("position", "status")) == [(0, "queued")]
    assert storage.job_storage().input_path(job.pk, 0).read_bytes() == photo_bytes("astronaut", "png")
    assert not Record.objects.exists()  # signed and counted by the worker, not here
    assert not UsageCounter.objects.filter(org=org, signatures_used__gt=0).exists()


def test_other_preferences_beside_respond_async_are_understood(key_client, org, generator):
    headers = {"HTTP_PREFER": "return=minimal, respond-async; foo=bar, wait=10"}
    assert _sign(key_client(org), generator, photo_bytes("astronaut", "png"), headers=headers).status_code == 202
    headers = {"HTTP_PREFER": "return=minimal"}
    assert _sign(key_client(org), generator, photo_bytes("astronaut", "png"), headers=headers).status_code == 201


def test_a_new_job_reads_as_queued_with_no_progress(key_client, org, generator):
    client = key_client(org)
    job_id = _sign(client, generator, photo_bytes("astronaut", "png"), headers=ASYNC).json()["job_id"]
    body = client.get(f"/v1/jobs/{job_id}").json()
    assert body == {"job_id": job_id, "status": "queued", "progress": 0.0,
                    "items": [{"status": "queued", "record_id": None, "token": None, "download_url": None,
                               "error": None}]}


def test_another_organizations_job_is_not_found(key_client, org, other_org, generator):
    job_id = _sign(key_client(org), generator, photo_bytes("astronaut", "png"), headers=ASYNC).json()["job_id"]
    outsider = key_client(other_org)
    for url in (f"/v1/jobs/{job_id}", f"/v1/jobs/{job_id}/items/0/content"):
        response = outsider.get(url)
        assert response.status_code == 404 and response.json()["error"] == "not_found"


def test_a_job_needs_a_credential(api_client, key_client, org, generator):
    job_id = _sign(key_client(org), generator, photo_bytes("astronaut", "png"), headers=ASYNC).json()["job_id"]
    assert api_client.get(f"/v1/jobs/{job_id}").json()["error"] == "authentication_required"


def test_an_unfinished_items_file_is_not_found(key_client, org, generator):
    client = key_client(org)
    job_id = _sign(client, generator, photo_bytes("astronaut", "png"), headers=ASYNC).json()["job_id"]
    assert client.get(f"/v1/jobs/{job_id}/items/0/content").json()["error"] == "not_found"
    assert client.get(f"/v1/jobs/{job_id}/items/7/content").status_code == 404


def test_an_async_sign_checks_the_generator_and_quota_before_keeping_anything(key_client, org, other_org, generator,
                                                                             job_storage):
    client = key_client(org)
    foreign = factories.make_generator(org=other_org)
    assert _sign(client, foreign, photo_bytes("astronaut", "png"), headers=ASYNC).status_code == 403
    factories.set_usage(org, 500)  # the free plan's whole allowance
    response = _sign(client, generator, photo_bytes("astronaut", "png"), headers=ASYNC)
    assert response.status_code == 402 and response.json()["error"] == "signature_limit_reached"
    assert not Job.objects.exists() and not list(job_storage.iterdir())


def test_an_async_sign_without_content_is_a_validation_error(key_client, org, generator):
    response = key_client(org).post("/v1/sign", {"model": "m", "generator_id": str(generator.pk)},
                                    format="multipart", **ASYNC)
    assert response.status_code == 400 and response.json()["error"] == "validation_error"


def test_batch_sign_needs_growth(key_client, org, generator):
    factories.make_user(org=org, role="owner")
    factories.set_usage(org, 0)
    for plan in ("free", "starter"):
        org.plan = plan
        org.save()
        response = _sign(key_client(org), generator, photo_bytes("astronaut", "png"), url="/v1/sign/batch")
        assert response.status_code == 402 and response.json()["error"] == "plan_required"
    assert not Job.objects.exists()


def test_batch_sign_answers_one_job_with_an_item_per_file_in_order(key_client, growth_org, growth_generator):
    files = [photo_bytes(name, "png") for name in ("astronaut", "chelsea", "coffee")]
    response = _sign(key_client(growth_org), growth_generator, *files, url="/v1/sign/batch")
    assert response.status_code == 202 and response["Location"] == f"/v1/jobs/{response.json()['job_id']}"
    job = Job.objects.get(pk=response.json()["job_id"])
    assert [storage.job_storage().input_path(job.pk, item.position).read_bytes() for item in job.items.all()] == files


def test_batch_sign_refuses_more_than_50_files_before_keeping_any(key_client, growth_org, growth_generator,
                                                                  job_storage):
    response = _sign(key_client(growth_org), growth_generator, *([b"x" * 10] * 51), url="/v1/sign/batch")
    assert response.status_code == 400 and response.json()["error"] == "validation_error"
    assert not Job.objects.exists() and not list(job_storage.iterdir())


def test_acceptance_checks_the_quota_for_every_file(org, generator):
    from core.errors import SignatureLimitReached
    from provenance.signing import signing_admit

    factories.set_usage(org, 499)
    with pytest.raises(SignatureLimitReached):
        signing_admit(org=org, generator_id=str(generator.pk), count=2)
    signing_admit(org=org, generator_id=str(generator.pk), count=1)


def test_async_embed_checks_the_record_first(key_client, org, other_org):
    response = key_client(org).post("/v1/records/00000000-0000-4000-8000-000000000000/c2pa/embed",
                                    {"content": io.BytesIO(b"x")}, format="multipart", **ASYNC)
    assert response.status_code == 402 and response.json()["error"] == "plan_required"  # free plan: gate first


def test_job_items_have_one_row_per_position(growth_org):
    job = Job.objects.create(org=growth_org, kind="sign")
    JobItem.objects.create(job=job, position=0)
    from django.db import IntegrityError, transaction

    with pytest.raises(IntegrityError), transaction.atomic():
        JobItem.objects.create(job=job, position=0)


def test_an_idempotency_key_replays_the_same_job(key_client, org, generator):
    client = key_client(org)
    headers = {**ASYNC, "HTTP_IDEMPOTENCY_KEY": "job-once"}
    first = _sign(client, generator, photo_bytes("astronaut", "png"), headers=headers)
    again = _sign(client, generator, photo_bytes("astronaut", "png"), headers=headers)
    assert first.status_code == again.status_code == 202
    assert again.json() == first.json() and again["Location"] == first["Location"]
    assert again["Idempotent-Replayed"] == "true" and Job.objects.count() == 1
