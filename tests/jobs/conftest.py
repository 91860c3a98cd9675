import uuid

import pytest

from tests import factories


@pytest.fixture(scope="module")
def job_storage(tmp_path_factory):
    """JOB_STORAGE_DIR for a module's tests (and its worker, which must see the same files)."""
    return tmp_path_factory.mktemp("job-files")


@pytest.fixture(autouse=True)
def _job_storage_setting(settings, job_storage):
    settings.JOB_STORAGE_DIR = str(job_storage)


@pytest.fixture
def generator(org):
    return factories.make_generator(org=org, formats=["image", "audio", "video", "text"])


@pytest.fixture
def growth_owner(growth_org):
    return factories.make_user(org=growth_org, role="owner")  # the batch gate wants a verified owner


@pytest.fixture
def growth_generator(growth_org, growth_owner):
    return factories.make_generator(org=growth_org, formats=["image", "audio", "video", "text"])


def new_queue() -> str:
    return f"test-jobs-{uuid.uuid4().hex[:12]}"


@pytest.fixture(scope="module")
def s3():
    """A real S3 endpoint over HTTP (moto's server) for a module's tests, and its worker."""
    from tests.jobs.s3_server import s3_endpoint

    with s3_endpoint() as endpoint:
        yield endpoint


@pytest.fixture
def s3_prefix(s3, settings, monkeypatch) -> str:
    """The jobs' files on the S3 endpoint (JOB_STORAGE_URL), under a prefix of the test's own."""
    prefix = f"jobs-{uuid.uuid4().hex[:8]}"
    for name, value in s3.env().items():
        monkeypatch.setenv(name, value)
    for name, value in s3.settings(prefix).items():
        setattr(settings, name, value)
    return f"{prefix}/"
