"""What `celery -A config worker` loads: the jobs' Celery application (jobs/celery_app.py) with the tasks of
every installed app (jobs/tasks.py)."""

import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

from jobs.celery_app import app  # after the settings module is named

app.autodiscover_tasks()

__all__ = ("app",)
