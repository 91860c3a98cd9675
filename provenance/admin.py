from django.contrib import admin

from provenance.models import Record


@admin.register(Record)
class RecordAdmin(admin.ModelAdmin):
    list_display = ("id", "org", "generator", "model", "format", "signed_at")
    list_filter = ("format",)
    search_fields = ("id", "watermark_id", "content_hash", "org__name")
    fields = ("id", "org", "generator", "key", "model", "watermark_id", "content_hash", "phash", "fingerprint_kind",
              "format", "signed_at")
    readonly_fields = fields

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False  # records are evidence: never edited
