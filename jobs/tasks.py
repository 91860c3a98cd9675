"""The Celery tasks: run a job, and the periodic cleanup (the beat schedule in config/settings.py)."""

from django.conf import settings

from jobs import runner, services, storage
from jobs.celery_app import app


# acks_late and reject_on_worker_lost (settings) make a job outlive its worker; the runner makes a
# second run harmless.
@app.task(name="jobs.tasks.job_run", bind=True, max_retries=None)
def job_run_task(self, job_id: str) -> None:
    try:
        runner.job_run(job_id)
    except storage.StorageUnavailable as error:
        # The job's files cannot be read or written now (a bucket or a volume away): the job runs again later,
        # its done items kept, instead of staying `running` with its message acknowledged.
        raise self.retry(countdown=settings.JOBS_STORAGE_RETRY_SECONDS, exc=error) from None


@app.task(name="jobs.tasks.jobs_cleanup")
def jobs_cleanup_task() -> dict:
    return {"purged": services.jobs_purge_expired(), "requeued": services.jobs_requeue_stalled()}
