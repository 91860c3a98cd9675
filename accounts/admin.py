"""Staff screens. Secrets and digests are never shown; API keys are revoked, never edited."""

from django.contrib import admin
from django.contrib.auth.admin import UserAdmin as DjangoUserAdmin
from django.utils import timezone
from django_otp.plugins.otp_totp.admin import TOTPDeviceAdmin
from django_otp.plugins.otp_totp.models import TOTPDevice

from accounts.models import ApiKey, Organization, User


class UserInline(admin.TabularInline):
    model = User
    fields = ("email", "role", "email_verified", "is_active", "created_at")
    readonly_fields = ("email", "created_at")
    extra = 0
    show_change_link = True


@admin.register(Organization)
class OrganizationAdmin(admin.ModelAdmin):
    list_display = ("name", "plan", "billing_interval", "created_at", "id")
    list_filter = ("plan", "billing_interval")
    search_fields = ("name", "id", "users__email")
    fields = ("id", "name", "plan", "billing_interval", "created_at")
    readonly_fields = ("id", "created_at")
    inlines = [UserInline]


@admin.register(User)
class UserAdmin(DjangoUserAdmin):
    ordering = ("-created_at",)
    list_display = ("email", "org", "role", "email_verified", "is_active", "is_staff", "created_at")
    list_filter = ("role", "email_verified", "is_active", "is_staff")
    search_fields = ("email", "id", "org__name")
    readonly_fields = ("id", "created_at", "last_login", "failed_otp_count", "otp_locked_until")
    fieldsets = (
        (None, {"fields": ("id", "email", "password", "org", "role")}),
        ("Status", {"fields": ("email_verified", "is_active", "is_staff", "is_superuser",
                               "failed_otp_count", "otp_locked_until")}),
        ("Dates", {"fields": ("created_at", "last_login")}),
    )
    add_fieldsets = ((None, {"classes": ("wide",), "fields": ("email", "org", "role", "password1", "password2")}),)
    filter_horizontal = ()


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):
    list_display = ("preview", "name", "org", "user", "created_at", "last_used_at", "revoked_at")
    list_filter = ("revoked_at",)
    search_fields = ("preview", "name", "org__name")
    # The digest and lookup id are deliberately absent: staff never see key material.
    # `user` set: a member's personal key.
    fields = ("id", "org", "user", "name", "preview", "created_by", "created_at", "last_used_at", "revoked_at")
    readonly_fields = fields
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
