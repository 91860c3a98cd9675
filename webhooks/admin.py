"""Read-only admin: the sealed signing secret is never displayed."""

from django.contrib import admin

from webhooks.events import EVENT_KINDS
from webhooks.models import WebhookDelivery, WebhookEndpoint


class EventFilter(admin.SimpleListFilter):
    """The event kinds there are: a plain field filter would run SELECT DISTINCT over the whole log."""

    title = "event"
    parameter_name = "event"

    def lookups(self, request, model_admin):
        return [(kind, kind) for kind in EVENT_KINDS]

    def queryset(self, request, queryset):
        return queryset.filter(event=self.value()) if self.value() else queryset


@admin.register(WebhookEndpoint)
class WebhookEndpointAdmin(admin.ModelAdmin):
    list_display = ("url", "org", "status", "consecutive_failures", "created_at")
    list_filter = ("status",)
    list_select_related = ("org",)
    search_fields = ("url", "id", "org__name", "org__id")
    fields = ("id", "org", "url", "events", "status", "consecutive_failures", "created_at", "updated_at")
    readonly_fields = fields

    def has_add_permission(self, request) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        # A delete here would skip webhooks.services: no audit event, and the organization's cached
        # list of active endpoints (Organization.active_webhooks) would keep delivering to it.
        return False


@admin.register(WebhookDelivery)
class WebhookDeliveryAdmin(admin.ModelAdmin):
    """The log as the organization sees it, for support: read-only (payloads carry no secret)."""

    list_display = ("created_at", "event", "status", "response_code", "latency_ms", "endpoint")
    list_filter = ("status", EventFilter)
    search_fields = ("id", "endpoint__url", "org__name")
    list_select_related = ("endpoint",)
    show_full_result_count = False
    list_per_page = 50  # rendering rows is most of the page's time (bench/dashboard_pages.py)
    fields = ("id", "org", "endpoint", "event", "status", "response_code", "latency_ms", "error", "retry_of",
              "payload", "created_at")
    readonly_fields = fields
    raw_id_fields = ("org", "endpoint", "retry_of")

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False
