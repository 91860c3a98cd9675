"""The Celery application of the jobs, configured from the CELERY_* settings (config/settings.py).

Workers load it through config/celery.py (`celery -A config worker`); a web process imports it only when it
first hands a job to the broker (jobs.services.job_enqueue), so serving requests never pays for Celery.
"""

from pathlib import Path

from celery import Celery

app = Celery("provenance")
app.config_from_object("django.conf:settings", namespace="CELERY")


@app.on_after_configure.connect
def _broker_folders(sender, **_) -> None:
    # The filesystem broker of development reads and writes folders that must exist.
    if sender.conf.broker_url.startswith("filesystem://"):
        for option in ("data_folder_in", "control_folder"):
            if folder := sender.conf.broker_transport_options.get(option):
                Path(folder).mkdir(parents=True, exist_ok=True)
