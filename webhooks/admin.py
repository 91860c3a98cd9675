"""Read-only admin: the sealed signing secret is never displayed."""

from django.contrib import admin

from webhooks.models import WebhookEndpoint


@admin.register(WebhookEndpoint)
class WebhookEndpointAdmin(admin.ModelAdmin):
    list_display = ("url", "org", "status", "consecutive_failures", "created_at")
    list_filter = ("status",)
    search_fields = ("url", "id", "org__name")
    fields = ("id", "org", "url", "events", "status", "consecutive_failures", "created_at", "updated_at")
    readonly_fields = fields

    def has_add_permission(self, request) -> bool:
        return False
