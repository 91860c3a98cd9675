"""Records for staff: read-only evidence. The signature is public, but long; it is left out."""

from django.contrib import admin

from media_codecs.registry import registered_codecs
from provenance.models import Record


class FormatFilter(admin.SimpleListFilter):
    """The formats the codecs know: a plain field filter would run SELECT DISTINCT over every record."""

    title = "format"
    parameter_name = "format"

    def lookups(self, request, model_admin):
        return [(codec.format, codec.format) for codec in registered_codecs()]

    def queryset(self, request, queryset):
        return queryset.filter(format=self.value()) if self.value() else queryset


@admin.register(Record)
class RecordAdmin(admin.ModelAdmin):
    list_display = ("id", "org", "generator", "model", "format", "signed_at")
    list_filter = (FormatFilter, "fingerprint_kind", ("signed_at", admin.DateFieldListFilter))
    list_select_related = ("org", "generator")
    # Whole values only, each on an index: a partial match would read every record. An organization's
    # records: the link on its page (?org__id__exact=...).
    search_fields = ("=id", "=watermark_id", "=content_hash", "=org__id")
    fields = ("id", "org", "generator", "key", "model", "watermark_id", "content_hash", "phash", "fingerprint_kind",
              "format", "signed_at", "log_index")
    readonly_fields = fields
    show_full_result_count = False  # no second COUNT over every record under a filtered or searched list
    list_per_page = 50  # rendering rows is most of the page's time (bench/dashboard_pages.py)

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False  # records are evidence: never edited

    def has_delete_permission(self, request, obj=None) -> bool:
        return False  # nor deleted
