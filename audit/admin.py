from django.contrib import admin

from audit.models import AuditEvent


@admin.register(AuditEvent)
class AuditEventAdmin(admin.ModelAdmin):
    list_display = ("timestamp", "type", "org")
    list_filter = ("type",)
    search_fields = ("org__name", "org__id")
    readonly_fields = ("id", "org", "type", "timestamp", "metadata")

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False  # the log is append-only
