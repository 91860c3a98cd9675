from django.apps import AppConfig
from django.core.signals import request_finished, request_started


class WebhooksConfig(AppConfig):
    name = "webhooks"
    verbose_name = "Webhooks"

    def ready(self) -> None:
        from audit.selectors import audit_names_register
        from webhooks.delivery import request_window_close, request_window_open
        from webhooks.models import WebhookEndpoint

        # The audit log shows an endpoint's URL for the `webhook_id` in an event (audit sits below webhooks).
        audit_names_register(key="webhook_id", names="webhooks", rows=WebhookEndpoint.objects.for_org, column="url")

        # All delivery rounds of one request share its 10-second window (webhooks/delivery.py).
        request_started.connect(request_window_open, dispatch_uid="webhooks.request_window_open")
        request_finished.connect(request_window_close, dispatch_uid="webhooks.request_window_close")
