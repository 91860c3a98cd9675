"""The operator's read-only view of the signature counts (written by signer/counting.py only)."""

from django.contrib import admin

from signer.models import SignatureCount


@admin.register(SignatureCount)
class SignatureCountAdmin(admin.ModelAdmin):
    list_display = ("day", "org_id", "generator_id", "purpose", "algorithm", "count")
    list_filter = ("day", "purpose", "algorithm")
    search_fields = ("org_id", "generator_id")
    date_hierarchy = "day"

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False
