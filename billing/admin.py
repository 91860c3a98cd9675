from django.contrib import admin

from billing.models import UsageCounter


@admin.register(UsageCounter)
class UsageCounterAdmin(admin.ModelAdmin):
    list_display = ("org", "period_start", "signatures_used")
    list_filter = ("period_start",)
    list_select_related = ("org",)
    search_fields = ("org__name", "org__id")
    readonly_fields = ("org", "period_start", "signatures_used")

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False  # counted only by signing, inside its transaction

    def has_delete_permission(self, request, obj=None) -> bool:
        return False  # a deleted row would hand the month's allowance back
