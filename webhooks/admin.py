"""Read-only admin: the sealed signing secret is never displayed."""

from django.contrib import admin

from webhooks.models import WebhookDelivery, WebhookEndpoint


@admin.register(WebhookEndpoint)
class WebhookEndpointAdmin(admin.ModelAdmin):
    list_display = ("url", "org", "status", "consecutive_failures", "created_at")
    list_filter = ("status",)
    search_fields = ("url", "id", "org__name")
    fields = ("id", "org", "url", "events", "status", "consecutive_failures", "created_at", "updated_at")
    readonly_fields = fields

    def has_add_permission(self, request) -> bool:
        return False


@admin.register(WebhookDelivery)
class WebhookDeliveryAdmin(admin.ModelAdmin):
    """The log as the organization sees it, for support: read-only (payloads carry no secret)."""

    list_display = ("created_at", "event", "status", "response_code", "latency_ms", "endpoint")
    list_filter = ("status", "event")
    search_fields = ("id", "endpoint__url", "org__name")
    list_select_related = ("endpoint",)
    fields = ("id", "org", "endpoint", "event", "status", "response_code", "latency_ms", "error", "retry_of",
              "payload", "created_at")
    readonly_fields = fields
    raw_id_fields = ("org", "endpoint", "retry_of")

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False
