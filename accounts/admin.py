"""Staff screens of members, API keys and 2FA devices (the organization's page, plan and usage, is billing/admin.py).
Secrets and digests are never shown; API keys are revoked, never edited."""

from django.contrib import admin
from django.contrib.auth.admin import UserAdmin as DjangoUserAdmin
from django.utils import timezone
from django_otp.plugins.otp_totp.admin import TOTPDeviceAdmin
from django_otp.plugins.otp_totp.models import TOTPDevice

from accounts.models import ApiKey, User


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
