# The Celery application, loaded with Django so that `jobs.tasks` enqueue through it (config/celery.py).
from config.celery import app as celery_app

__all__ = ("celery_app",)
