"""Staff screens of billing: each organization's plan and usage, the usage counters and owners' plan requests.

The organization's page lives here rather than in accounts/admin.py: it shows usage and changes the plan
through billing's services, and accounts sits below billing."""

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied
from django.http import Http404
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html, format_html_join

from accounts.models import Organization, User
from accounts.plans import BILLING_INTERVALS, PLAN_NAMES
from billing.models import PlanRequest, UsageCounter
from billing.selectors import organizations_with_usage, usage_for_org
from billing.services import plan_change, plan_request_apply
from core.errors import NotFound


class UserInline(admin.TabularInline):
    """Members at a glance. Read-only: roles and membership change through the team routes (audit, last owner)."""

    model = User
    fields = ("email", "role", "email_verified", "is_active", "created_at")
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request, obj=None) -> bool:
        return False


# The organization page links to these lists narrowed to it (`org__id__exact` uses the org_id index).
ORG_LISTS = (("provenance_record", "records"), ("audit_auditevent", "audit events"),
             ("generators_generator", "generators"), ("accounts_apikey", "API keys"),
             ("webhooks_webhookendpoint", "webhook endpoints"), ("teams_invite", "invites"))


class SetPlanForm(forms.Form):
    plan = forms.ChoiceField(choices=[(name, name) for name in PLAN_NAMES])
    billing_interval = forms.ChoiceField(choices=[(name, name) for name in BILLING_INTERVALS])


@admin.register(Organization)
class OrganizationAdmin(admin.ModelAdmin):
    """Plan and usage of each organization. The plan changes only through `plan_change` (the "Change plan"
    page), so the change is audited and re-arms the quota announcement like `manage.py set_plan`.
    `active_webhooks` (sealed webhook secrets) is never shown."""

    list_display = ("name", "plan", "billing_interval", "signatures_this_period", "created_at", "id")
    list_filter = ("plan", "billing_interval", ("created_at", admin.DateFieldListFilter))
    search_fields = ("name", "id", "users__email")
    fields = ("id", "name", "plan_and_interval", "usage", "lists", "created_at")
    readonly_fields = ("id", "plan_and_interval", "usage", "lists", "created_at")
    inlines = [UserInline]

    def get_queryset(self, request):
        return organizations_with_usage(super().get_queryset(request))

    def has_add_permission(self, request) -> bool:
        return False  # organizations are created by registration (and `createsuperuser`)

    def has_delete_permission(self, request, obj=None) -> bool:
        return False  # it would take its records and audit log with it: evidence is never deleted here

    @admin.display(description="signatures this month", ordering="signatures_this_period")
    def signatures_this_period(self, org: Organization) -> int:
        return org.signatures_this_period

    @admin.display(description="usage this period")
    def usage(self, org: Organization) -> str:
        usage = usage_for_org(org)
        included = "unlimited" if usage.signatures_included is None else f"{usage.signatures_included:,}"
        shown = (f"{usage.signatures_used:,} of {included} signatures, {usage.period_start:%Y-%m-%d} to "
                 f"{usage.period_end:%Y-%m-%d} (UTC)")
        if not usage.overage_rate:
            return shown
        return f"{shown}; overage {usage.overage_count:,} at ${usage.overage_rate} each"

    @admin.display(description="plan")
    def plan_and_interval(self, org: Organization) -> str:
        url = reverse("admin:accounts_organization_set_plan", args=[org.pk])
        return format_html('{}, billed {} &nbsp; <a class="button" href="{}">Change plan</a>', org.plan,
                           org.billing_interval, url)

    @admin.display(description="its rows")
    def lists(self, org: Organization) -> str:
        links = [(reverse(f"admin:{name}_changelist"), label) for name, label in ORG_LISTS]
        return format_html_join(" · ", '<a href="{}?org__id__exact={}">{}</a>',
                                ((url, org.pk, label) for url, label in links))

    def get_urls(self):
        set_plan = path("<path:object_id>/set-plan/", self.admin_site.admin_view(self.set_plan_view),
                        name="accounts_organization_set_plan")
        return [set_plan, *super().get_urls()]

    def set_plan_view(self, request, object_id: str):
        org = self.get_object(request, unquote(object_id))
        if org is None:
            raise Http404
        if not self.has_change_permission(request, org):
            raise PermissionDenied
        form = SetPlanForm(request.POST or None, initial={"plan": org.plan, "billing_interval": org.billing_interval})
        if request.method == "POST" and form.is_valid():
            plan_change(org=org, plan=form.cleaned_data["plan"], actor=request.user.email,
                        billing_interval=form.cleaned_data["billing_interval"])
            message = f"Plan set to {org.plan}, billed {org.billing_interval}."
            self.log_change(request, org, message)
            self.message_user(request, message)
            return redirect(reverse("admin:accounts_organization_change", args=[org.pk]))
        context = {**self.admin_site.each_context(request), "title": f"Change the plan of {org.name}",
                   "form": form, "original": org, "opts": self.opts, "usage": self.usage(org)}
        return TemplateResponse(request, "admin/accounts/organization/set_plan.html", context)


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
