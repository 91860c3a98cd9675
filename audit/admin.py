"""The audit log for staff: read-only (append-only by design), searchable by organization and metadata."""

from django.contrib import admin

from audit.models import AuditEvent


@admin.register(AuditEvent)
class AuditEventAdmin(admin.ModelAdmin):
    list_display = ("timestamp", "type", "org")
    list_filter = ("type", ("timestamp", admin.DateFieldListFilter))
    list_select_related = ("org",)
    # Metadata carries the ids and emails support searches for (generator_id, webhook_id, actor).
    search_fields = ("org__name", "org__id", "metadata")
    fields = ("id", "org", "type", "timestamp", "metadata")
    readonly_fields = fields
    show_full_result_count = False  # no second COUNT over the whole log under a filtered list
    list_per_page = 50  # rendering rows is most of the page's time (bench/dashboard_pages.py)

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False  # the log is append-only

    def has_delete_permission(self, request, obj=None) -> bool:
        return False
