from django.apps import AppConfig
from django.core.signals import request_finished, request_started


class WebhooksConfig(AppConfig):
    name = "webhooks"
    verbose_name = "Webhooks"

    def ready(self) -> None:
        from webhooks.delivery import request_window_close, request_window_open

        # All delivery rounds of one request share its 10-second window (webhooks/delivery.py).
        request_started.connect(request_window_open, dispatch_uid="webhooks.request_window_open")
        request_finished.connect(request_window_close, dispatch_uid="webhooks.request_window_close")
