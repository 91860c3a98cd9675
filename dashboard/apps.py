from django.apps import AppConfig


class DashboardConfig(AppConfig):
    name = "dashboard"
    verbose_name = "Dashboard"

    def ready(self) -> None:
        from django.utils import timezone

        from core import housekeeping
        from dashboard.services import signed_files_purge

        # Signed files go as soon as their hour is over: they are the bulkiest rows, and nothing reads them after.
        housekeeping.register("signed-file downloads", lambda: signed_files_purge(before=timezone.now()))
