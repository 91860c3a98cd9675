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
