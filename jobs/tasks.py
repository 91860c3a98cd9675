"""The Celery tasks: run a job, and the periodic cleanup (the beat schedule in config/settings.py)."""

from jobs import runner, services
from jobs.celery_app import app


# acks_late and reject_on_worker_lost (settings) make a job outlive its worker; the runner makes a
# second run harmless.
@app.task(name="jobs.tasks.job_run")
def job_run_task(job_id: str) -> None:
    runner.job_run(job_id)


@app.task(name="jobs.tasks.jobs_cleanup")
def jobs_cleanup_task() -> dict:
    return {"purged": services.jobs_purge_expired(), "requeued": services.jobs_requeue_stalled()}
