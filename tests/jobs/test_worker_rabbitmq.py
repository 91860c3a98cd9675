"""The same jobs on RabbitMQ, by configuration only: CELERY_BROKER_URL=amqp://... for the web side and a real
Celery worker process, nothing else changed. The life cycle with a file that fails alone, and a worker
SIGKILLed mid-job whose job RabbitMQ hands to the next worker (late acknowledgement: the unacknowledged
message is redelivered when the dead worker's connection closes), every signature counted once.

Needs the RabbitMQ of this machine (127.0.0.1:5672, guest/guest) and PostgreSQL (the worker is another
process); skipped without either.
"""

import socket

import pytest

from billing.models import UsageCounter
from tests.jobs.conftest import new_queue
from tests.jobs.test_worker import (  # noqa: F401 - _postgres_only and _queue_setting are fixtures
    BAD,
    GOOD,
    _accept,
    _poll_until_finished,
    _postgres_only,
    _queue_setting,
    job_outlives_a_killed_worker,
)
from tests.jobs.worker import Worker, publishing_to

RABBITMQ = ("127.0.0.1", 5672)
BROKER_URL = f"amqp://guest:guest@{RABBITMQ[0]}:{RABBITMQ[1]}//"


def _rabbitmq_answers() -> bool:
    try:
        with socket.create_connection(RABBITMQ, timeout=2):
            return True
    except OSError:
        return False


pytestmark = [pytest.mark.skipif(not _rabbitmq_answers(), reason="no RabbitMQ on 127.0.0.1:5672"),
              pytest.mark.django_db(transaction=True)]


@pytest.fixture(scope="module")
def queue():
    """The test process publishes to RabbitMQ, on a queue of this module's own, deleted afterwards."""
    from jobs.celery_app import app

    with publishing_to(BROKER_URL):
        name = new_queue()
        yield name
        with app.connection_for_write() as broker:
            broker.default_channel.queue_delete(name)


@pytest.fixture(scope="module")
def worker(queue, job_storage, tmp_path_factory, _postgres_only):  # noqa: F811
    started = Worker(queue=queue, storage=job_storage, log=tmp_path_factory.mktemp("worker") / "worker.log",
                     env={"CELERY_BROKER_URL": BROKER_URL}).start()
    yield started
    started.stop()


def test_a_job_on_rabbitmq_succeeds_with_its_bad_file_failing_alone(worker, key_client, growth_org,
                                                                     growth_generator):
    assert "amqp://guest:**@127.0.0.1:5672//" in worker.output()  # the worker's broker, as Celery prints it
    client = key_client(growth_org)
    body, _ = _poll_until_finished(client, _accept(client, growth_generator, GOOD, BAD, GOOD), worker)
    assert body["status"] == "succeeded" and body["progress"] == 1.0
    assert [item["status"] for item in body["items"]] == ["succeeded", "failed", "succeeded"]
    assert body["items"][1]["error"]["error"] == "format_not_supported"
    assert UsageCounter.objects.get(org=growth_org).signatures_used == 2


def test_a_job_on_rabbitmq_outlives_a_worker_killed_mid_job_and_counts_once(worker, key_client, growth_org,
                                                                             growth_generator):
    # RabbitMQ hands the unacknowledged message to the next worker when the dead one's connection closes.
    job_outlives_a_killed_worker(worker, key_client(growth_org), growth_org, growth_generator)
