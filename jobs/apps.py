from django.apps import AppConfig


class JobsConfig(AppConfig):
    name = "jobs"
    verbose_name = "Jobs (long signing work on the task queue)"

    def ready(self) -> None:
        from core import housekeeping
        from jobs.services import jobs_purge_expired

        # `manage.py purge_expired` deletes expired job files and rows too (the periodic task does the same).
        housekeeping.register("job files and rows", jobs_purge_expired)
