from django.contrib import admin, messages

from billing.models import PlanRequest, UsageCounter
from billing.services import plan_request_apply
from core.errors import NotFound


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


@admin.register(PlanRequest)
class PlanRequestAdmin(admin.ModelAdmin):
    """Owners' plan requests from the billing page. Staff apply one with the action, which changes the
    plan through the billing service (audited `billing.plan_changed`, with the staff email as actor)."""

    list_display = ("org", "plan", "billing_interval", "status", "requested_by_email", "created_at", "decided_by")
    list_filter = ("status", "plan")
    list_select_related = ("org",)
    search_fields = ("org__name", "org__id", "requested_by_email")
    readonly_fields = ("id", "org", "requested_by", "requested_by_email", "plan", "billing_interval", "status",
                       "created_at", "decided_at", "decided_by")
    exclude = ("requested_by",)
    actions = ["apply_requests"]

    def has_add_permission(self, request) -> bool:
        return False  # owners ask from the billing page

    def has_delete_permission(self, request, obj=None) -> bool:
        return False  # the history of what was asked and decided stays

    @admin.action(description="Apply the requested plan", permissions=["change"])
    def apply_requests(self, request, queryset):
        selected, applied = queryset.count(), 0  # counted first: the list may be filtered on pending
        for plan_request in queryset.filter(status=PlanRequest.Status.PENDING).order_by("created_at"):
            try:
                plan_request_apply(request_id=plan_request.pk, staff_email=request.user.email)
            except NotFound:
                continue  # cancelled or applied meanwhile
            self.log_change(request, plan_request, f"Applied: {plan_request.plan}, {plan_request.billing_interval}.")
            applied += 1
        skipped = selected - applied
        self.message_user(request, f"Applied {applied} request{'s' if applied != 1 else ''}"
                                   f"{f'; {skipped} not pending, left as they are' if skipped else ''}.",
                          messages.SUCCESS if applied else messages.WARNING)
