"""The Celery application of the jobs (jobs/tasks.py): `celery -A config worker` runs a worker.

Its settings are the CELERY_* names of config/settings.py; config/__init__.py imports this module so that
web processes enqueue through the same configured application.
"""

import os
from pathlib import Path

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("config")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@app.on_after_configure.connect
def _broker_folders(sender, **_) -> None:
    # The filesystem broker of development reads and writes folders that must exist.
    for option in ("data_folder_in", "control_folder"):
        folder = sender.conf.broker_transport_options.get(option)
        if folder and sender.conf.broker_url.startswith("filesystem://"):
            Path(folder).mkdir(parents=True, exist_ok=True)
