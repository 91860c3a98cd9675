from django.apps import AppConfig


class CoreConfig(AppConfig):
    """The shared platform as an app: it owns the tables of the shared infrastructure (rate counters,
    idempotent responses)."""

    name = "core"
    verbose_name = "Infrastructure"

    def ready(self) -> None:
        from django.db.models.signals import post_migrate

        from core import housekeeping, idempotency, ratelimit
        from core.cachetable import create_cache_tables
        from core.errors import install_server_refusals

        post_migrate.connect(create_cache_tables, sender=self)
        housekeeping.register("rate counters", ratelimit.purge_expired)
        housekeeping.register("idempotent responses", idempotency.purge_expired)
        install_server_refusals()  # gunicorn's and the development server's own 400/414/431 pages
