"""Staff screens. Secrets and digests are never shown; API keys are revoked, never edited."""

from django import forms
from django.contrib import admin
from django.contrib.admin.utils import unquote
from django.contrib.auth.admin import UserAdmin as DjangoUserAdmin
from django.core.exceptions import PermissionDenied
from django.http import Http404
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django_otp.plugins.otp_totp.admin import TOTPDeviceAdmin
from django_otp.plugins.otp_totp.models import TOTPDevice

from accounts.models import ApiKey, Organization, User
from billing.plans import BILLING_INTERVALS, PLAN_NAMES
from billing.selectors import organizations_with_usage, usage_for_org
from billing.services import plan_change


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


@admin.register(User)
class UserAdmin(DjangoUserAdmin):
    """The password hash is never shown, not even Django's masked summary: `password_state` says only
    whether one is set."""

    ordering = ("-created_at",)
    list_display = ("email", "org", "role", "email_verified", "two_factor_enabled", "is_active", "is_staff",
                    "created_at")
    list_filter = ("role", "email_verified", "two_factor_enabled", "is_active", "is_staff", "is_superuser")
    list_select_related = ("org",)
    search_fields = ("email", "id", "org__name")
    readonly_fields = ("id", "password_state", "created_at", "last_login", "sessions_valid_after",
                       "two_factor_enabled", "failed_otp_count", "otp_locked_until")
    fieldsets = (
        (None, {"fields": ("id", "email", "password_state", "org", "role")}),
        ("Status", {"fields": ("email_verified", "is_active", "is_staff", "is_superuser", "two_factor_enabled",
                               "failed_otp_count", "otp_locked_until")}),
        ("Dates", {"fields": ("created_at", "last_login", "sessions_valid_after")}),
    )
    add_fieldsets = ((None, {"classes": ("wide",), "fields": ("email", "org", "role", "password1", "password2")}),)
    filter_horizontal = ()

    @admin.display(description="password")
    def password_state(self, user: User) -> str:
        return "set" if user.has_usable_password() else "none (cannot log in with a password)"


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):
    list_display = ("preview", "name", "org", "user", "created_at", "last_used_at", "revoked_at")
    list_filter = ("revoked_at",)
    search_fields = ("preview", "name", "org__name")
    # The digest and lookup id are deliberately absent: staff never see key material.
    # `user` set: a member's personal key.
    fields = ("id", "org", "user", "name", "preview", "created_by", "created_at", "last_used_at", "revoked_at")
    readonly_fields = fields
    list_select_related = ("org", "user")
    actions = ["revoke"]

    def has_add_permission(self, request) -> bool:
        return False

    @admin.action(description="Revoke selected keys")
    def revoke(self, request, queryset) -> None:
        count = queryset.filter(revoked_at__isnull=True).update(revoked_at=timezone.now())
        self.message_user(request, f"Revoked {count} key(s).")


class ReadOnlyTOTPDeviceAdmin(TOTPDeviceAdmin):
    """Who has a second factor, never the factor: OTP_ADMIN_HIDE_SENSITIVE_DATA hides the key and QR code.

    No add (the form shows the new key, and the device would skip enrolment), no change or delete (they
    would desynchronise `User.two_factor_enabled`, which the 2FA services keep).
    """

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


admin.site.unregister(TOTPDevice)  # registered by django_otp.plugins.otp_totp, listed before us
admin.site.register(TOTPDevice, ReadOnlyTOTPDeviceAdmin)
