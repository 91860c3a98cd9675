"""A real Celery worker (`celery -A config worker`) for the job tests, on the local Redis and the test
database: its own Redis database per pytest-xdist process and its own queue, so parallel test processes
never take each other's jobs, and a short visibility timeout so that a killed worker's job comes back soon."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from django.conf import settings

from tests.waiting import wait_for_process

PROJECT = Path(__file__).resolve().parents[2]
VISIBILITY_TIMEOUT = 3  # seconds before a dead worker's job goes back to the queue (tests only)


def broker_url() -> str:
    # Redis databases 14 and 15 are other tests'; 11 to 13 are these, one per xdist process.
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw-1")
    return f"redis://127.0.0.1:6379/{12 + int(worker.removeprefix('gw'))}"


@contextmanager
def publishing_to(url: str) -> Iterator[None]:
    """This process's jobs published to the broker at `url` while in the block, then to the one before.

    Celery's app.close() drops the connection pool but not the producer pool built on it
    (`app.amqp._producer_pool`), which keeps publishing to the first broker this process used: both go."""
    from jobs.celery_app import app

    def switch(to: str) -> None:
        app.conf.broker_url = to
        app.close()
        app.amqp._producer_pool = None

    saved = app.conf.broker_url
    switch(url)
    try:
        yield
    finally:
        switch(saved)


def database_url() -> str:
    db = settings.DATABASES["default"]
    return f"postgres://{db['USER']}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"


class Worker:
    """One worker process (solo pool: the job runs in the process a test kills)."""

    def __init__(self, *, queue: str, storage: Path, log: Path, env: dict[str, str] | None = None):
        self.queue, self.storage, self.log = queue, storage, log
        self.env = env or {}  # settings of this worker beside the test ones (progress interval, S3 storage)
        self.process: subprocess.Popen | None = None

    def start(self) -> Worker:
        env = {**os.environ, "DATABASE_URL": database_url(), "CELERY_BROKER_URL": broker_url(),
               "JOBS_QUEUE": self.queue, "JOB_STORAGE_DIR": str(self.storage),
               "JOBS_VISIBILITY_TIMEOUT": str(VISIBILITY_TIMEOUT), "DJANGO_SETTINGS_MODULE": "tests.settings",
               "PYTHONPATH": str(PROJECT), "SIGNER_SOCKET": "", "LOG_FORMAT": "text", **self.env}
        self.log.write_text("")
        with open(self.log, "ab") as out:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "celery", "-A", "config", "worker", "--pool=solo", "-Q", self.queue,
                 "--without-gossip", "--without-mingle", "--without-heartbeat", "--loglevel=INFO",
                 f"--hostname=test-{uuid.uuid4().hex[:8]}@%h"],
                cwd=PROJECT, env=env, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True)
        wait_for_process(lambda: "ready." in self.output(), self.process, what="the Celery worker's start",
                         details=self.output)
        return self

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def kill(self) -> None:
        """SIGKILL, as a lost machine or the kernel's OOM killer would: no shutdown, no acknowledgement."""
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)  # Celery's warm shutdown
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.kill()
